/** Previous and Next over pages read by cursor (lib/cursor-pages.ts). */
export function Pager(props: { page: number; onPrevious: () => void; onNext: (() => void) | undefined }) {
  return (
    <nav className="row" aria-label="Pages">
      <button type="button" onClick={props.onPrevious} disabled={props.page <= 1}>
        Previous page
      </button>
      <span>Page {props.page}</span>
      <button type="button" onClick={props.onNext} disabled={!props.onNext}>
        Next page
      </button>
    </nav>
  );
}
