import type { BackupCounts } from './backup.records.js';
import type { EngineCounts } from './database-dump.port.js';

/**
 * What a restore of a backup must hold, from the counts taken before and after its dump: each item
 * between the lower and the higher of the two (writes made while the dump ran widen the range; an item
 * that may shrink by itself, a Redis database's keys with a TTL, down to its floor). An item in only one
 * of the two (a table made or dropped during the dump) may be missing. Null when neither was counted.
 */
export function expectationOf(before: EngineCounts | null, after: EngineCounts | null): BackupCounts | null {
  const counted = [before, after].filter((c): c is EngineCounts => c !== null);
  if (counted.length === 0) return null;
  const names = new Set(counted.flatMap((c) => Object.keys(c.counts)));
  const expected: BackupCounts['expected'] = {};
  for (const name of [...names].sort()) {
    const values = counted.map((c) => c.counts[name]);
    const floors = counted.map((c) => c.floors?.[name] ?? c.counts[name]);
    const inAll = values.every((v) => v !== undefined);
    expected[name] = {
      min: inAll ? Math.min(...(floors as number[])) : 0,
      max: Math.max(...values.filter((v): v is number => v !== undefined)),
    };
  }
  return { unit: counted[0]!.unit, expected };
}

/** The exact expectation of a tar: its files and bytes, as they passed. */
export function exactCounts(stats: { files: number; bytes: number }): BackupCounts {
  return { unit: 'files', expected: { files: { min: stats.files, max: stats.files }, bytes: { min: stats.bytes, max: stats.bytes } } };
}

/**
 * The differences between what a restored copy holds and what its backup recorded, one sentence each
 * (empty: they match). An item the copy holds that the backup never counted is a difference when it is
 * not empty.
 */
export function countMismatches(expected: BackupCounts, actual: Record<string, number>): string[] {
  const unit = expected.unit === 'files' ? '' : ` ${expected.unit}`;
  const mismatches: string[] = [];
  for (const [name, { min, max }] of Object.entries(expected.expected)) {
    const got = actual[name] ?? 0;
    if (got < min || got > max) {
      const wanted = min === max ? `${min}` : `${min} to ${max}`;
      mismatches.push(`${name}: ${got}${unit} restored, ${wanted} at backup time`);
    }
  }
  for (const [name, got] of Object.entries(actual))
    if (!(name in expected.expected) && got > 0) mismatches.push(`${name}: ${got}${unit} restored, not there at backup time`);
  return mismatches;
}
