import type { BackupRecord } from '../backups/backup.records.js';
import { isSegment, timelineOf } from '../domain/wal-spool.js';
import type { PitrSettingsRecord, WalSegmentRecord } from './pitr.records.js';

/*
 * What point-in-time recovery can reach (docs/backups.md, Point-in-time recovery): each succeeded base
 * backup reaches from the second it ended to the last commit of the unbroken run of WAL segments that
 * starts at its first segment. A missing segment ends the run: nothing after a gap can be replayed.
 */

/** Segments per log file with PostgreSQL's default 16 MiB segments (0x100000000 / 0x1000000). */
const SEGMENTS_PER_LOG = 0x100;

/** The segment after `name` on its timeline (`000000010000000000000FF` -> `000000010000000100000000`). */
export function nextSegment(name: string): string {
  const timeline = name.slice(0, 8);
  let log = Number.parseInt(name.slice(8, 16), 16);
  let seg = Number.parseInt(name.slice(16, 24), 16) + 1;
  if (seg >= SEGMENTS_PER_LOG) {
    seg = 0;
    log += 1;
  }
  const hex = (n: number) => n.toString(16).toUpperCase().padStart(8, '0');
  return `${timeline}${hex(log)}${hex(seg)}`;
}

/** Reachable seconds, both ends included. */
export interface RecoveryWindow {
  earliest: Date;
  latest: Date;
}

const ceilSecond = (d: Date) => new Date(Math.ceil(d.getTime() / 1000) * 1000);
const floorSecond = (d: Date) => new Date(Math.floor(d.getTime() / 1000) * 1000);

/**
 * The window one base backup opens: from the second after it ended (recovery must replay to its end
 * before the data is consistent) to the last second its unbroken WAL run covers; null when the run
 * does not reach past the backup's end (the segment holding it is not archived yet).
 */
export function windowOfBase(base: BackupRecord, segments: WalSegmentRecord[]): RecoveryWindow | null {
  if (base.kind !== 'base' || base.status !== 'succeeded' || !base.walStart || !base.finishedAt) return null;
  const timeline = timelineOf(base.walStart);
  const byName = new Map(segments.filter((s) => isSegment(s.name) && timelineOf(s.name) === timeline).map((s) => [s.name, s]));
  let name = base.walStart;
  let last: WalSegmentRecord | null = null;
  for (let segment = byName.get(name); segment; segment = byName.get(name)) {
    last = segment;
    name = nextSegment(name);
  }
  if (!last) return null;
  const earliest = ceilSecond(base.finishedAt);
  const latest = floorSecond(last.completedAt);
  return latest.getTime() >= earliest.getTime() ? { earliest, latest } : null;
}

/**
 * The window of the archive: the union of its base backups' windows, and of those the interval that
 * holds the newest second (an older interval cut off by a gap is not shown as reachable from now).
 */
export function windowOf(bases: BackupRecord[], segments: WalSegmentRecord[]): RecoveryWindow | null {
  const windows = bases
    .map((b) => windowOfBase(b, segments))
    .filter((w): w is RecoveryWindow => w !== null)
    .sort((a, b) => a.earliest.getTime() - b.earliest.getTime());
  let merged: RecoveryWindow | null = null;
  for (const w of windows) {
    // Adjacent seconds join: a base that ends where the previous run's last second is leaves no hole.
    if (merged && w.earliest.getTime() <= merged.latest.getTime() + 1000) {
      if (w.latest.getTime() > merged.latest.getTime()) merged = { earliest: merged.earliest, latest: w.latest };
    } else if (!merged || w.latest.getTime() >= merged.latest.getTime()) merged = w;
  }
  return merged;
}

/** The base backup a restore to `at` starts from: the newest whose window holds `at`; null when none does. */
export function baseFor(at: Date, bases: BackupRecord[], segments: WalSegmentRecord[]): BackupRecord | null {
  const holding = bases
    .map((base) => ({ base, window: windowOfBase(base, segments) }))
    .filter(({ window }) => window && window.earliest.getTime() <= at.getTime() && at.getTime() <= window.latest.getTime())
    .sort((a, b) => b.window!.earliest.getTime() - a.window!.earliest.getTime());
  return holding[0]?.base ?? null;
}

/** The WAL files a restore from `base` reads: its run of segments, and the timelines' history files. */
export function filesFor(base: BackupRecord, segments: WalSegmentRecord[]): WalSegmentRecord[] {
  if (!base.walStart) return [];
  const timeline = timelineOf(base.walStart);
  return segments.filter((s) =>
    isSegment(s.name) ? timelineOf(s.name) === timeline && s.name >= base.walStart! : s.name.endsWith('.history'),
  );
}

/** The archive's lag as GET .../pitr shows it. */
export interface ArchiveLag {
  /** WAL waiting in the database's spool. */
  pendingSegments: number;
  pendingBytes: number;
  /** How long the oldest waiting segment has waited; 0 when none waits. */
  seconds: number;
  /** Segments waited past `lagLimitSeconds`, or the last pass could not ship: the service shows it as lagging. */
  lagging: boolean;
  lastShippedAt: Date | null;
  lastError: string | null;
}

export function lagOf(settings: PitrSettingsRecord, now: Date, lagLimitSeconds: number): ArchiveLag {
  const seconds = settings.oldestPendingAt ? Math.max(0, Math.round((now.getTime() - settings.oldestPendingAt.getTime()) / 1000)) : 0;
  return {
    pendingSegments: settings.pendingSegments,
    pendingBytes: settings.pendingBytes,
    seconds,
    lagging: seconds > lagLimitSeconds || (settings.pendingSegments > 0 && settings.lastError !== null),
    lastShippedAt: settings.lastShippedAt,
    lastError: settings.lastError,
  };
}

/** Segments and base backups past the retention, keeping what the oldest base still inside it needs. */
export function beyondRetention(
  bases: BackupRecord[],
  segments: WalSegmentRecord[],
  retentionDays: number,
  now: Date,
): { bases: BackupRecord[]; segments: WalSegmentRecord[] } {
  const cutoff = now.getTime() - retentionDays * 86_400_000;
  const succeeded = bases
    .filter((b) => b.status === 'succeeded' && b.walStart && b.finishedAt)
    .sort((a, b) => a.finishedAt!.getTime() - b.finishedAt!.getTime());
  // The newest base at or before the cutoff stays: it is what reaches the cutoff's seconds.
  const keepFrom = [...succeeded].reverse().find((b) => b.finishedAt!.getTime() <= cutoff) ?? succeeded[0];
  if (!keepFrom) return { bases: [], segments: [] };
  const oldBases = succeeded.filter((b) => b.finishedAt!.getTime() < keepFrom.finishedAt!.getTime());
  const oldSegments = segments.filter((s) => isSegment(s.name) && s.name < keepFrom.walStart!);
  return { bases: oldBases, segments: oldSegments };
}
