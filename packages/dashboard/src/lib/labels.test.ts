import { describe, expect, it } from 'vitest';
import { formatLabels, parseLabels, userLabels } from './labels';

describe('server labels as typed', () => {
  it('reads key=value lines, skipping blanks and comments, values keeping inner = and spaces', () => {
    expect(parseLabels('region=eu-1\n\n# a note\n disk = ssd \nnote=a=b c\n')).toEqual({
      ok: true,
      labels: { region: 'eu-1', disk: 'ssd', note: 'a=b c' },
    });
    expect(parseLabels('')).toEqual({ ok: true, labels: {} });
  });

  it('names the line of a label without a key, or given twice', () => {
    expect(parseLabels('region=eu\nssd')).toEqual({ ok: false, line: 2, message: 'Line 2: write key=value' });
    expect(parseLabels('=x')).toMatchObject({ ok: false, line: 1 });
    expect(parseLabels('a=1\na=2')).toEqual({ ok: false, line: 2, message: 'Line 2: a is given twice' });
  });

  it('keeps the platform’s own labels out of what a person edits, and writes labels back as lines', () => {
    const labels = { region: 'eu', 'slipway.server': 'srv_1' };
    expect(userLabels(labels)).toEqual({ region: 'eu' });
    expect(formatLabels({ region: 'eu', disk: 'ssd' })).toBe('region=eu\ndisk=ssd');
    expect(parseLabels(formatLabels({ region: 'eu', disk: 'ssd' }))).toEqual({ ok: true, labels: { region: 'eu', disk: 'ssd' } });
  });
});
