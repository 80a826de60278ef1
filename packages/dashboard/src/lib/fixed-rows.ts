import { type RefObject, useCallback, useLayoutEffect, useRef, useState } from 'react';
import { flushSync } from 'react-dom';

/** The rows to render for a scroll position: those in view and `overscan` more on each side. */
export function visibleRange(
  scrollTop: number,
  viewport: number,
  rowHeight: number,
  count: number,
  overscan: number,
): { start: number; end: number } {
  if (count <= 0 || rowHeight <= 0) return { start: 0, end: 0 };
  const first = Math.floor(Math.max(0, scrollTop) / rowHeight);
  const last = Math.ceil((Math.max(0, scrollTop) + Math.max(0, viewport)) / rowHeight);
  return { start: Math.max(0, Math.min(count, first - overscan)), end: Math.min(count, last + overscan) };
}

/** The scroll position that shows row `index` in the middle of the viewport (within the list's bounds). */
export function centredScrollTop(index: number, viewport: number, rowHeight: number, count: number): number {
  const max = Math.max(0, count * rowHeight - viewport);
  return Math.max(0, Math.min(max, index * rowHeight - (viewport - rowHeight) / 2));
}

/**
 * A list of rows of one height, virtualized: only the rows in view and about a screenful around them are
 * rendered, found from the scroll position by arithmetic. (A general virtualizer measures every item and
 * keeps a position per item, recomputed when the count changes: for a log growing to 100,000 lines that
 * was the page's largest cost.) The rendered range changes only when the view reaches its edge, and then
 * synchronously in the scroll event, before the frame is painted, so no blank rows show while scrolling.
 */
export function useFixedRows(scrollRef: RefObject<HTMLElement | null>, count: number, rowHeight: number, overscan?: number) {
  const [range, setRange] = useState({ start: 0, end: 0 });
  const latest = useRef({ range, count });
  latest.current = { range, count };
  useLayoutEffect(() => {
    const el = scrollRef.current;
    if (!el) return;
    const update = (sync: boolean) => {
      const { range: current, count: n } = latest.current;
      const height = el.clientHeight;
      const inView = visibleRange(el.scrollTop, height, rowHeight, n, 0);
      if (inView.start >= current.start && inView.end <= current.end && current.end <= n && current.end - current.start > 0) return;
      const next = visibleRange(el.scrollTop, height, rowHeight, n, overscan ?? Math.ceil(height / rowHeight));
      if (next.start === current.start && next.end === current.end) return;
      if (sync) flushSync(() => setRange(next));
      else setRange(next);
    };
    const onScroll = () => update(true);
    el.addEventListener('scroll', onScroll, { passive: true });
    const resize = new ResizeObserver(() => update(false));
    resize.observe(el);
    update(false);
    return () => {
      el.removeEventListener('scroll', onScroll);
      resize.disconnect();
    };
  }, [scrollRef, rowHeight, overscan]);
  // More or fewer rows (a log growing, a filter): the range is checked again against the view.
  useLayoutEffect(() => {
    const el = scrollRef.current;
    if (!el) return;
    const inView = visibleRange(el.scrollTop, el.clientHeight, rowHeight, count, 0);
    if (inView.start >= range.start && inView.end <= range.end && range.end <= count && (count === 0 || range.end > range.start)) return;
    setRange(visibleRange(el.scrollTop, el.clientHeight, rowHeight, count, overscan ?? Math.ceil(el.clientHeight / rowHeight)));
  }, [count, scrollRef, rowHeight, overscan, range]);
  const scrollToIndex = useCallback(
    (index: number) => {
      const el = scrollRef.current;
      if (el) el.scrollTop = centredScrollTop(index, el.clientHeight, rowHeight, count);
    },
    [scrollRef, rowHeight, count],
  );
  return { start: range.start, end: Math.min(range.end, count), totalHeight: count * rowHeight, scrollToIndex };
}
