import type { ReactNode } from 'react';
import { Pager } from './pager';
import { Empty } from './ui';

/**
 * A page of a list read by cursor, as a table: its empty state (the first page's, or past the last), a table that
 * scrolls sideways on a phone (by keyboard too), and Previous/Next below.
 */
export function PagedTable(props: {
  /** Names the scrolling region and, "newest first", the table's caption. */
  label: string;
  columns: readonly string[];
  count: number;
  empty: ReactNode;
  emptyPastFirst: ReactNode;
  page: number;
  onPrevious: () => void;
  onNext: (() => void) | undefined;
  children?: ReactNode;
}) {
  return (
    <>
      {props.count === 0 ? (
        <Empty>{props.page > 1 ? props.emptyPastFirst : props.empty}</Empty>
      ) : (
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a table wider than a phone scrolls sideways, by keyboard too
        <section className="table-wrap" tabIndex={0} aria-label={`${props.label} table`}>
          <table>
            <caption className="visually-hidden">{props.label}, newest first</caption>
            <thead>
              <tr>
                {props.columns.map((c) => (
                  <th key={c} scope="col">
                    {c}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>{props.children}</tbody>
          </table>
        </section>
      )}
      <Pager page={props.page} onPrevious={props.onPrevious} onNext={props.onNext} />
    </>
  );
}
