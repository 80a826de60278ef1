import { describe, expect, it } from 'vitest';
import type { BackupRecord } from '../../src/backups/backup.records.js';
import { baseFor, beyondRetention, filesFor, lagOf, nextSegment, windowOf, windowOfBase } from '../../src/pitr/pitr-window.js';
import { pitrRestoreInput, pitrSettingsInput } from '../../src/pitr/pitr.inputs.js';
import type { PitrSettingsRecord, WalSegmentRecord } from '../../src/pitr/pitr.records.js';
import { baseBackupRecord } from '../helpers/wal-spool.js';

/** Point-in-time recovery's window, base choice, retention and lag, and its inputs' refusals (pure functions). */

const T0 = Date.parse('2026-11-28T10:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000);

const base = (id: string, walStart: string, finishedSecond: number, status: BackupRecord['status'] = 'succeeded') =>
  baseBackupRecord('db', id, walStart, at(finishedSecond), status);

function seg(name: string, completedSecond: number): WalSegmentRecord {
  return {
    id: name,
    serviceId: 'db',
    name,
    timeline: 1,
    walBytes: 16 * 1024 * 1024,
    sizeBytes: 1000,
    checksum: 'sha256:00',
    completedAt: at(completedSecond),
    storedAt: at(completedSecond + 1),
    localPath: `/w/${name}`,
    objectKey: null,
    storageId: null,
  };
}

const S = (n: number) => `00000001000000000000000${n.toString(16).toUpperCase()}`;

describe('point-in-time recovery window', () => {
  it('steps segment names across a log boundary', () => {
    expect(nextSegment('000000010000000000000003')).toBe('000000010000000000000004');
    expect(nextSegment('0000000100000000000000FF')).toBe('000000010000000100000000');
    expect(nextSegment('00000002000000AB0000000F')).toBe('00000002000000AB00000010');
  });

  it("reaches from a base backup's end to its unbroken run's last segment; a gap ends the run", () => {
    const b = base('b1', S(2), 10.2);
    const segments = [seg(S(2), 12), seg(S(3), 40), seg(S(4), 70), seg(S(6), 130)];
    expect(windowOfBase(b, segments)).toEqual({ earliest: at(11), latest: at(70) });
    expect(windowOf([b], segments)).toEqual({ earliest: at(11), latest: at(70) });
    // No window before the segment holding the backup's end is archived, and none for a failed base.
    expect(windowOfBase(b, [])).toBeNull();
    expect(windowOfBase(base('b2', S(2), 10, 'failed'), segments)).toBeNull();
    // A history file is not a segment of the run.
    expect(windowOfBase(b, [seg(S(2), 12), { ...seg('00000002.history', 50), timeline: 2 }])).toEqual({ earliest: at(11), latest: at(12) });
  });

  it('joins the windows of successive bases; after a gap, shows the interval that holds the newest second', () => {
    const first = base('b1', S(2), 10);
    const second = base('b2', S(5), 75);
    const joined = [seg(S(2), 12), seg(S(3), 40), seg(S(4), 80), seg(S(5), 90), seg(S(6), 130)];
    expect(windowOf([first, second], joined)).toEqual({ earliest: at(10), latest: at(130) });
    const gapped = [seg(S(2), 12), seg(S(3), 40), seg(S(5), 90), seg(S(6), 130)];
    expect(windowOf([first, second], gapped)).toEqual({ earliest: at(75), latest: at(130) });
    // The base a restore starts from is the newest whose window holds the second.
    expect(baseFor(at(100), [first, second], joined)?.id).toBe('b2');
    expect(baseFor(at(30), [first, second], joined)?.id).toBe('b1');
    expect(baseFor(at(50), [first, second], gapped)).toBeNull();
    expect(baseFor(at(131), [first, second], joined)).toBeNull();
    expect(filesFor(second, [...joined, { ...seg('00000002.history', 50), timeline: 2 }]).map((s) => s.name)).toEqual([
      S(5),
      S(6),
      '00000002.history',
    ]);
  });

  it('keeps, past the retention, the newest base at or before the cutoff and every segment from its start', () => {
    const bases = [base('b1', S(2), 10), base('b2', S(5), 86_400 + 10), base('b3', S(8), 2 * 86_400 + 10)];
    const segments = [S(2), S(3), S(4), S(5), S(6), S(7), S(8), S(9)].map((n, i) => seg(n, 20 + i));
    const old = beyondRetention(bases, segments, 1, at(2 * 86_400 + 100));
    expect(old.bases.map((b) => b.id)).toEqual(['b1']);
    expect(old.segments.map((s) => s.name)).toEqual([S(2), S(3), S(4)]);
    expect(beyondRetention(bases, segments, 30, at(2 * 86_400 + 100))).toEqual({ bases: [], segments: [] });
  });

  it('shows the archive as lagging when segments wait past the limit or the last pass failed', () => {
    const settings = {
      pendingSegments: 2,
      pendingBytes: 32 * 1024 * 1024,
      oldestPendingAt: at(0),
      lastShippedAt: at(-60),
      lastError: null,
    } as PitrSettingsRecord;
    expect(lagOf(settings, at(30), 120)).toMatchObject({ seconds: 30, lagging: false });
    expect(lagOf(settings, at(300), 120)).toMatchObject({ seconds: 300, lagging: true });
    expect(lagOf({ ...settings, lastError: 'the object store did not answer' }, at(30), 120)).toMatchObject({ lagging: true });
    expect(lagOf({ ...settings, pendingSegments: 0, pendingBytes: 0, oldestPendingAt: null }, at(30), 120)).toMatchObject({
      seconds: 0,
      lagging: false,
    });
  });
});

describe('point-in-time recovery inputs', () => {
  const fieldOf = (result: { success: boolean; error?: { issues: Array<{ path: PropertyKey[] }> } }) =>
    result.success ? null : result.error!.issues[0]!.path.join('.');

  it('refuses retentionDays of 0 or over 3650, an unknown storage shape and unknown fields, naming the field', () => {
    expect(pitrSettingsInput.safeParse({ enabled: true, storage: 'disk', retentionDays: 14 }).success).toBe(true);
    expect(pitrSettingsInput.safeParse({ enabled: true, storage: 'object', retentionDays: 3650 }).success).toBe(true);
    expect(fieldOf(pitrSettingsInput.safeParse({ enabled: true, retentionDays: 0 }))).toBe('retentionDays');
    expect(fieldOf(pitrSettingsInput.safeParse({ enabled: true, retentionDays: 3651 }))).toBe('retentionDays');
    expect(fieldOf(pitrSettingsInput.safeParse({ enabled: true, retentionDays: 1.5 }))).toBe('retentionDays');
    expect(fieldOf(pitrSettingsInput.safeParse({ enabled: 'yes' }))).toBe('enabled');
    expect(pitrSettingsInput.safeParse({ enabled: true, walG: true }).success).toBe(false);
  });

  it('refuses an `at` that is not an ISO time with a zone, and replace without confirm', () => {
    expect(pitrRestoreInput.safeParse({ at: '2026-11-28T10:00:05Z' }).success).toBe(true);
    expect(pitrRestoreInput.safeParse({ at: '2026-11-28T11:00:05+01:00' }).success).toBe(true);
    for (const bad of ['yesterday', '2026-11-28', '2026-11-28T10:00:05', 1764324005, '2026-13-28T10:00:05Z'])
      expect(fieldOf(pitrRestoreInput.safeParse({ at: bad })), String(bad)).toBe('at');
    expect(fieldOf(pitrRestoreInput.safeParse({ at: '2026-11-28T10:00:05Z', replace: true }))).toBe('confirm');
    expect(pitrRestoreInput.safeParse({ at: '2026-11-28T10:00:05Z', replace: true, confirm: 'orders db' }).success).toBe(true);
  });
});
