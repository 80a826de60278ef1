import { act, renderHook } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { useLineBuffer } from './log-view';

const line = (id: number) => ({ id, line: `line ${id}`, stream: 'stdout' });

describe('the log line buffer', () => {
  it('appends in order and skips lines it already holds (a resumed stream, an overlapping page)', () => {
    const { result } = renderHook(() => useLineBuffer());
    act(() => result.current.append([line(1), line(2), line(3)]));
    // A stream resumed after id 2 sends its snapshot from 3: 3 is not shown twice.
    act(() => result.current.append([line(3), line(4)]));
    act(() => result.current.append([line(2), line(5)]));
    expect(result.current.lines.map((l) => l.id)).toEqual([1, 2, 3, 4, 5]);
    act(() => result.current.reset([line(7)]));
    expect(result.current.lines.map((l) => l.id)).toEqual([7]);
  });
});
