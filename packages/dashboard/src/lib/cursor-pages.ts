import { useState } from 'react';

/**
 * Paging over an API that answers `nextCursor`: the cursors of the pages seen so far are kept, so
 * that Previous goes back without the API having to page backwards.
 */
export function useCursorPages() {
  const [stack, setStack] = useState<Array<string | undefined>>([undefined]);
  const cursor = stack[stack.length - 1];
  return {
    cursor,
    page: stack.length,
    next: (nextCursor: string) => setStack((s) => [...s, nextCursor]),
    previous: () => setStack((s) => (s.length > 1 ? s.slice(0, -1) : s)),
    reset: () => setStack([undefined]),
  };
}
