import { describe, expect, it } from 'vitest';
import { centredScrollTop, visibleRange } from './fixed-rows';

describe('fixed-height rows', () => {
  it('renders the rows in view and the overscan around them, within the list', () => {
    // 20 px rows, a 100 px viewport scrolled to 1,000 px: rows 50-54 in view.
    expect(visibleRange(1000, 100, 20, 100_000, 0)).toEqual({ start: 50, end: 55 });
    expect(visibleRange(1000, 100, 20, 100_000, 5)).toEqual({ start: 45, end: 60 });
    // A row cut by the top or the bottom edge counts as in view.
    expect(visibleRange(1010, 100, 20, 100_000, 0)).toEqual({ start: 50, end: 56 });
    expect(visibleRange(0, 100, 20, 3, 10)).toEqual({ start: 0, end: 3 });
    expect(visibleRange(1_999_900, 100, 20, 100_000, 10)).toEqual({ start: 99_985, end: 100_000 });
  });

  it('renders nothing for an empty list, and bounds a scroll position past the end', () => {
    expect(visibleRange(0, 500, 20, 0, 10)).toEqual({ start: 0, end: 0 });
    expect(visibleRange(5_000, 500, 20, 10, 2)).toEqual({ start: 10, end: 10 });
    expect(visibleRange(-50, 100, 20, 10, 0)).toEqual({ start: 0, end: 5 });
  });

  it('centres a row in the viewport, never scrolling out of the list', () => {
    expect(centredScrollTop(500, 100, 20, 100_000)).toBe(500 * 20 - 40);
    expect(centredScrollTop(0, 100, 20, 100_000)).toBe(0);
    expect(centredScrollTop(99_999, 100, 20, 100_000)).toBe(100_000 * 20 - 100);
    expect(centredScrollTop(3, 500, 20, 5)).toBe(0);
  });
});
