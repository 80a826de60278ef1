import { describe, expect, it } from 'vitest';
import { findMatches, splitMatches, stepMatch, stripAnsi } from './log-search';

describe('log search', () => {
  const lines = ['Step 1/3 : FROM node', 'npm ERR! missing script', 'Step 2/3', 'npm err! again'].map((line) => ({ line }));

  it('finds lines case-insensitively', () => {
    expect(findMatches(lines, 'npm err')).toEqual([1, 3]);
    expect(findMatches(lines, '')).toEqual([]);
    expect(findMatches(lines, 'nothing')).toEqual([]);
  });

  it('splits a line around every match', () => {
    expect(splitMatches('abcABCab', 'ab')).toEqual([
      { text: 'ab', match: true },
      { text: 'c', match: false },
      { text: 'AB', match: true },
      { text: 'C', match: false },
      { text: 'ab', match: true },
    ]);
    expect(splitMatches('xyz', '')).toEqual([{ text: 'xyz', match: false }]);
  });

  it('steps through matches, wrapping', () => {
    expect(stepMatch(3, -1, 1)).toBe(0);
    expect(stepMatch(3, -1, -1)).toBe(2);
    expect(stepMatch(3, 2, 1)).toBe(0);
    expect(stepMatch(3, 0, -1)).toBe(2);
    expect(stepMatch(0, 0, 1)).toBe(-1);
  });

  it('searches 100,000 lines in one pass', () => {
    const big = Array.from({ length: 100_000 }, (_, i) => ({ line: `line ${i} of the build ${i % 1000 === 0 ? 'NEEDLE' : ''}` }));
    const found = findMatches(big, 'needle');
    expect(found).toHaveLength(100);
    expect(found[1]).toBe(1000);
  });

  it('strips terminal escape sequences', () => {
    expect(stripAnsi('\u001b[32mok\u001b[0m done')).toBe('ok done');
  });
});
