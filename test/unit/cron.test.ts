import { describe, expect, it } from 'vitest';
import { CronError, parseCron } from '../../src/backups/cron.js';
import { scheduleOf } from '../../src/backups/backup-schedule.service.js';
import { ValidationError } from '../../src/domain/errors.js';

/*
 * The cron parser against known cases (UTC): next and previous slots worked out by hand from a
 * calendar (2026-11-27 is a Friday), then against a brute-force matcher that tries every minute.
 */

const at = (iso: string) => new Date(iso);
const next = (expression: string, after: string) => parseCron(expression).next(at(after))?.toISOString();
const previous = (expression: string, before: string) => parseCron(expression).previous(at(before))?.toISOString();

describe('cron: next and previous slots', () => {
  it.each([
    ['*/15 * * * *', '2026-11-27T08:34:45Z', '2026-11-27T08:45:00.000Z'],
    ['*/15 * * * *', '2026-11-27T08:45:00Z', '2026-11-27T09:00:00.000Z'],
    ['0 3 * * *', '2026-11-27T03:00:00Z', '2026-11-28T03:00:00.000Z'],
    ['0 3 * * *', '2026-11-27T02:59:59Z', '2026-11-27T03:00:00.000Z'],
    ['0 0 * * 1', '2026-11-27T10:00:00Z', '2026-11-30T00:00:00.000Z'],
    ['0 0 1 * *', '2026-11-27T10:00:00Z', '2026-12-01T00:00:00.000Z'],
    ['0 0 29 2 *', '2026-03-01T00:00:00Z', '2028-02-29T00:00:00.000Z'],
    ['0 0 31 * *', '2026-11-27T00:00:00Z', '2026-12-31T00:00:00.000Z'],
    ['0 0 31 * *', '2027-01-31T00:00:00Z', '2027-03-31T00:00:00.000Z'],
    ['59 23 31 12 *', '2026-12-31T23:59:00Z', '2027-12-31T23:59:00.000Z'],
    // Both day fields restricted: the 13th or a Friday, whichever comes first.
    ['0 12 13 * 5', '2026-11-27T13:00:00Z', '2026-12-04T12:00:00.000Z'],
    ['0 12 13 * 5', '2026-12-04T12:00:00Z', '2026-12-11T12:00:00.000Z'],
    ['0 12 13 * 5', '2026-12-11T12:00:00Z', '2026-12-13T12:00:00.000Z'],
    // A star with a step is unrestricted: both must match.
    ['0 12 */2 * 5', '2026-11-27T13:00:00Z', '2026-12-11T12:00:00.000Z'],
    ['30 9 * JAN-MAR MON-FRI', '2026-11-27T10:00:00Z', '2027-01-01T09:30:00.000Z'],
    ['0 0 * * 7', '2026-11-27T10:00:00Z', '2026-11-29T00:00:00.000Z'],
    ['0 0 * * sun', '2026-11-27T10:00:00Z', '2026-11-29T00:00:00.000Z'],
    ['5/10 * * * *', '2026-11-27T10:56:00Z', '2026-11-27T11:05:00.000Z'],
    ['10-20/5 8,18 * * *', '2026-11-27T08:20:00Z', '2026-11-27T18:10:00.000Z'],
    ['@hourly', '2026-11-27T10:00:00Z', '2026-11-27T11:00:00.000Z'],
    ['@weekly', '2026-11-27T10:00:00Z', '2026-11-29T00:00:00.000Z'],
    ['@yearly', '2026-11-27T10:00:00Z', '2027-01-01T00:00:00.000Z'],
  ])('%s after %s is %s', (expression, after, expected) => {
    expect(next(expression, after)).toBe(expected);
  });

  it.each([
    ['*/15 * * * *', '2026-11-27T08:34:45Z', '2026-11-27T08:30:00.000Z'],
    ['*/15 * * * *', '2026-11-27T08:30:00Z', '2026-11-27T08:30:00.000Z'],
    ['0 3 * * *', '2026-11-27T02:59:59Z', '2026-11-26T03:00:00.000Z'],
    ['0 0 * * 1', '2026-11-27T10:00:00Z', '2026-11-23T00:00:00.000Z'],
    ['0 0 1 * *', '2026-11-27T10:00:00Z', '2026-11-01T00:00:00.000Z'],
    ['0 0 29 2 *', '2026-11-27T10:00:00Z', '2024-02-29T00:00:00.000Z'],
    ['0 0 31 * *', '2026-12-30T00:00:00Z', '2026-10-31T00:00:00.000Z'],
    ['0 12 13 * 5', '2026-12-12T00:00:00Z', '2026-12-11T12:00:00.000Z'],
    ['10-20/5 8,18 * * *', '2026-11-27T18:05:00Z', '2026-11-27T08:20:00.000Z'],
  ])('%s at or before %s is %s', (expression, before, expected) => {
    expect(previous(expression, before)).toBe(expected);
  });

  it('agrees with a minute-by-minute matcher on a seeded sample of expressions and times', () => {
    let seed = 20261127;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const field = (min: number, max: number) => {
      switch (random(5)) {
        case 0:
          return '*';
        case 1:
          return `*/${1 + random(max - min + 1)}`;
        case 2: {
          const a = min + random(max - min + 1);
          return `${a}-${a + random(max - a + 1)}`;
        }
        case 3:
          return `${min + random(max - min + 1)},${min + random(max - min + 1)}`;
        default:
          return `${min + random(max - min + 1)}`;
      }
    };
    const expand = (text: string, min: number, max: number) => {
      const out = new Set<number>();
      for (const item of text.split(',')) {
        const [range, step] = item.split('/');
        const [lo, hi] = range === '*' ? [min, max] : range!.includes('-') ? range!.split('-').map(Number) : [Number(range), Number(range)];
        for (let v = lo!; v <= hi!; v += step ? Number(step) : 1) out.add(v);
      }
      return out;
    };
    for (let sample = 0; sample < 60; sample++) {
      // Frequent enough for a brute force over a few days: minute, hour and weekday vary, any day of the month.
      const parts = [field(0, 59), field(0, 23), '*', '*', field(0, 6)];
      const sets = [expand(parts[0]!, 0, 59), expand(parts[1]!, 0, 23), expand(parts[4]!, 0, 6)];
      const matches = (t: Date) => sets[0]!.has(t.getUTCMinutes()) && sets[1]!.has(t.getUTCHours()) && sets[2]!.has(t.getUTCDay());
      const from = Date.UTC(2026, random(12), 1 + random(28), random(24), random(60), random(60));
      let expectedNext: string | undefined;
      for (let t = Math.floor(from / 60_000) * 60_000 + 60_000; t < from + 8 * 86_400_000; t += 60_000)
        if (matches(new Date(t))) {
          expectedNext = new Date(t).toISOString();
          break;
        }
      let expectedPrevious: string | undefined;
      for (let t = Math.floor(from / 60_000) * 60_000; t > from - 8 * 86_400_000; t -= 60_000)
        if (matches(new Date(t))) {
          expectedPrevious = new Date(t).toISOString();
          break;
        }
      const expression = parts.join(' ');
      expect(next(expression, new Date(from).toISOString()), expression).toBe(expectedNext);
      expect(previous(expression, new Date(from).toISOString()), expression).toBe(expectedPrevious);
    }
  });
});

describe('cron: what is refused, and why', () => {
  it.each([
    ['', /empty/],
    ['* * * *', /5 fields .* has 4/],
    ['0 * * * * *', /has 6: seconds are not supported/],
    ['61 * * * *', /minute field "61": 61 is out of range 0-59/],
    ['0 24 * * *', /hour field "24": 24 is out of range 0-23/],
    ['0 0 0 * *', /day-of-month field "0": 0 is out of range 1-31/],
    ['0 0 * 13 *', /month field "13": 13 is out of range 1-12/],
    ['0 0 * * 8', /day-of-week field "8": 8 is out of range 0-7/],
    ['0 0 * FOO *', /month field "FOO": "FOO" is neither a number 1-12 nor a name \(JAN, /],
    ['*/0 * * * *', /step must be 1 or more/],
    ['*/x * * * *', /the step "x" is not a whole number/],
    ['30-10 * * * *', /the range 30-10 runs backwards/],
    ['1,,2 * * * *', /an empty list item/],
    ['1-2-3 * * * *', /is not a value or a range/],
    ['0 0 30 2 *', /never fires/],
    ['0 0 31 4,6,9,11 *', /never fires/],
    ['@reboot', /Unknown macro @reboot/],
  ])('%j: %s', (expression, message) => {
    expect(() => parseCron(expression)).toThrow(CronError);
    expect(() => parseCron(expression)).toThrow(message);
  });

  it('measures the shortest interval between two slots, across midnight when two days in a row fire', () => {
    const shortest = (e: string) => parseCron(e).shortestIntervalMinutes();
    expect(shortest('*/5 * * * *')).toBe(5);
    expect(shortest('*/4 * * * *')).toBe(4);
    expect(shortest('* * * * *')).toBe(1);
    expect(shortest('0,55 0,23 * * *')).toBe(5);
    expect(shortest('0,55 0,23 1 * *')).toBe(55);
    expect(shortest('0 3 * * *')).toBe(1440);
    expect(shortest('58 23 * * 1')).toBe(Number.POSITIVE_INFINITY);
    expect(shortest('58 23 * * 1,2')).toBe(1440);
  });

  it('refuses a schedule under the 5-minute floor with a 400 on `schedule` saying how often it fires', () => {
    expect(scheduleOf('*/5 * * * *').expression).toBe('*/5 * * * *');
    for (const [expression, message] of [
      ['* * * * *', /fires every minute at its most frequent; backups may be at most every 5 minutes/],
      ['*/4 * * * *', /fires 4 minutes apart/],
      ['58,2 23,0 * * *', /fires 4 minutes apart/],
      ['61 * * * *', /minute field/],
    ] as const) {
      let error: unknown;
      try {
        scheduleOf(expression);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).details.field).toBe('schedule');
      expect((error as ValidationError).message).toMatch(message);
    }
  });
});
