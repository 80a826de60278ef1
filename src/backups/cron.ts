/**
 * Five-field cron expressions (minute hour day-of-month month day-of-week), read in UTC, as Vixie cron
 * reads them: `*`, lists, ranges, steps (`1-30/2`, `5/10`, a star with a step), month and day names (`JAN`, `mon`),
 * 0 or 7 for Sunday, and the macros `@hourly`, `@daily`, `@midnight`, `@weekly`, `@monthly`, `@yearly`,
 * `@annually`. When both day fields are restricted (neither starts with `*`), a day matches either one.
 *
 * Our own parser, not a package: the API's 400 names the field and says what is wrong with it, the
 * floor check needs the expanded sets, and the scheduler needs the slot before a time as well as the
 * one after it. About 200 lines, tested against known cases (test/unit/cron.test.ts).
 */

export class CronError extends Error {}

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const FIELDS: readonly FieldSpec[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] },
  { name: 'day-of-week', min: 0, max: 7, names: ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] },
];

const MACROS: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

const MINUTE_MS = 60_000;
export const DAY_MS = 86_400_000;
/** How far next() and previous() look: past every leap day and weekday alignment a valid expression can need. */
const HORIZON_MS = 29 * 366 * DAY_MS;

export interface CronSchedule {
  /** The expression as given (trimmed). */
  readonly expression: string;
  /** The first slot strictly after `after` (whole minutes, UTC); null when it never fires. */
  next(after: Date): Date | null;
  /** The last slot at or before `at`; null when none in the horizon. */
  previous(at: Date): Date | null;
  /** The shortest time between two consecutive slots, in minutes. */
  shortestIntervalMinutes(): number;
}

export function parseCron(input: string): CronSchedule {
  const expression = input.trim();
  if (expression === '') throw new CronError('The schedule is empty: give five fields, minute hour day-of-month month day-of-week');
  let text = expression;
  if (text.startsWith('@')) {
    const macro = MACROS[text.toLowerCase()];
    if (!macro) throw new CronError(`Unknown macro ${text}: use one of ${Object.keys(MACROS).join(', ')} or five fields`);
    text = macro;
  }
  const parts = text.split(/\s+/);
  if (parts.length !== 5)
    throw new CronError(
      `A schedule has 5 fields (minute hour day-of-month month day-of-week), this one has ${parts.length}` +
        (parts.length === 6 ? ': seconds are not supported' : ''),
    );
  const sets = parts.map((part, i) => parseField(part, FIELDS[i]!));
  const [minutes, hours, days, months, weekdays] = sets as [number[], number[], number[], number[], number[]];
  // Sunday is 0 and 7.
  const dow = new Set(weekdays.map((d) => d % 7));
  const schedule = new Cron(expression, minutes, hours, new Set(days), new Set(months), dow, parts[2]!, parts[4]!);
  if (!schedule.next(new Date(Date.UTC(2000, 0, 1))))
    throw new CronError('The schedule never fires: no date matches both its day-of-month and its month');
  return schedule;
}

function parseField(text: string, spec: FieldSpec): number[] {
  const values = new Set<number>();
  const fail = (why: string): never => {
    throw new CronError(`The ${spec.name} field ${JSON.stringify(text)}: ${why}`);
  };
  for (const item of text.split(',')) {
    if (item === '') fail('an empty list item');
    const [range, stepText, extra] = item.split('/');
    if (extra !== undefined) fail(`"${item}" has more than one step`);
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText)) fail(`the step "${stepText}" is not a whole number`);
      step = Number(stepText);
      if (step < 1) fail('a step must be 1 or more');
    }
    let low: number;
    let high: number;
    if (range === '*') {
      low = spec.min;
      high = spec.name === 'day-of-week' ? 6 : spec.max;
    } else {
      const bounds = range!.split('-');
      if (bounds.length > 2) fail(`"${range}" is not a value or a range`);
      low = fieldValue(bounds[0]!, spec, fail);
      // `5/10` is `5-<max>/10`, as in Vixie cron.
      high = bounds.length === 2 ? fieldValue(bounds[1]!, spec, fail) : stepText !== undefined ? spec.max : low;
      if (low > high) fail(`the range ${range} runs backwards (${low} > ${high})`);
    }
    for (let v = low; v <= high; v += step) values.add(v);
  }
  return [...values].sort((a, b) => a - b);
}

function fieldValue(text: string, spec: FieldSpec, fail: (why: string) => never): number {
  if (/^\d+$/.test(text)) {
    const value = Number(text);
    if (value < spec.min || value > spec.max) fail(`${value} is out of range ${spec.min}-${spec.max}`);
    return value;
  }
  const index = spec.names?.indexOf(text.toUpperCase()) ?? -1;
  if (index >= 0) return spec.name === 'month' ? index + 1 : index;
  return fail(
    spec.names
      ? `"${text}" is neither a number ${spec.min}-${spec.max} nor a name (${spec.names.join(', ')})`
      : `"${text}" is not a number ${spec.min}-${spec.max}`,
  );
}

class Cron implements CronSchedule {
  /** Vixie cron: when both day fields are restricted, a day matches either; else both must match. */
  private readonly eitherDay: boolean;

  constructor(
    readonly expression: string,
    private readonly minutes: number[],
    private readonly hours: number[],
    private readonly days: Set<number>,
    private readonly months: Set<number>,
    private readonly weekdays: Set<number>,
    dayText: string,
    weekdayText: string,
  ) {
    this.eitherDay = !dayText.startsWith('*') && !weekdayText.startsWith('*');
  }

  private dayMatches(t: Date): boolean {
    const dom = this.days.has(t.getUTCDate());
    const dow = this.weekdays.has(t.getUTCDay());
    return this.eitherDay ? dom || dow : dom && dow;
  }

  next(after: Date): Date | null {
    const limit = after.getTime() + HORIZON_MS;
    let t = new Date(Math.floor(after.getTime() / MINUTE_MS) * MINUTE_MS + MINUTE_MS);
    while (t.getTime() <= limit) {
      const [y, mo, d, h, mi] = [t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate(), t.getUTCHours(), t.getUTCMinutes()];
      if (!this.months.has(mo + 1)) t = new Date(Date.UTC(y, mo + 1, 1));
      else if (!this.dayMatches(t)) t = new Date(Date.UTC(y, mo, d + 1));
      else if (!this.hours.includes(h)) {
        const nh = this.hours.find((x) => x > h);
        t = nh === undefined ? new Date(Date.UTC(y, mo, d + 1)) : new Date(Date.UTC(y, mo, d, nh));
      } else if (!this.minutes.includes(mi)) {
        const nm = this.minutes.find((x) => x > mi);
        t = nm === undefined ? new Date(Date.UTC(y, mo, d, h + 1)) : new Date(Date.UTC(y, mo, d, h, nm));
      } else return t;
    }
    return null;
  }

  previous(at: Date): Date | null {
    const limit = at.getTime() - HORIZON_MS;
    let t = new Date(Math.floor(at.getTime() / MINUTE_MS) * MINUTE_MS);
    while (t.getTime() >= limit) {
      const [y, mo, d, h, mi] = [t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate(), t.getUTCHours(), t.getUTCMinutes()];
      const before = (ms: number) => new Date(ms - MINUTE_MS);
      if (!this.months.has(mo + 1)) t = before(Date.UTC(y, mo, 1));
      else if (!this.dayMatches(t)) t = before(Date.UTC(y, mo, d));
      else if (!this.hours.includes(h)) {
        const ph = lastBelow(this.hours, h);
        t = ph === undefined ? before(Date.UTC(y, mo, d)) : new Date(Date.UTC(y, mo, d, ph, 59));
      } else if (!this.minutes.includes(mi)) {
        const pm = lastBelow(this.minutes, mi);
        t = pm === undefined ? before(Date.UTC(y, mo, d, h)) : new Date(Date.UTC(y, mo, d, h, pm));
      } else return t;
    }
    return null;
  }

  shortestIntervalMinutes(): number {
    const times = this.hours.flatMap((h) => this.minutes.map((m) => h * 60 + m));
    let shortest = Number.POSITIVE_INFINITY;
    for (let i = 1; i < times.length; i++) shortest = Math.min(shortest, times[i]! - times[i - 1]!);
    // Across midnight, from the day's last slot to the next day's first, when two days in a row match.
    const wrap = times[0]! + 1440 - times.at(-1)!;
    if (wrap < shortest && this.hasConsecutiveDays()) shortest = wrap;
    return shortest;
  }

  private hasConsecutiveDays(): boolean {
    // 28 years: every alignment of weekdays with dates, leap years included.
    const start = Date.UTC(2000, 0, 1);
    let previous = false;
    for (let day = 0; day < 28 * 366; day++) {
      const t = new Date(start + day * DAY_MS);
      const matches = this.months.has(t.getUTCMonth() + 1) && this.dayMatches(t);
      if (matches && previous) return true;
      previous = matches;
    }
    return false;
  }
}

/** The largest value of an ascending list below `value`. */
function lastBelow(sorted: number[], value: number): number | undefined {
  let found: number | undefined;
  for (const x of sorted) {
    if (x >= value) break;
    found = x;
  }
  return found;
}
