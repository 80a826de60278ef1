import type { Readable } from 'node:stream';
import { ConflictError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { PitrSettingsRecord } from './pitr.records.js';
import type { WalSpool } from './wal-archive.port.js';
import { timelineOf } from '../domain/wal-spool.js';

/** Where a database's WAL is stored: the disk, or an object store (the install's, or a storage instance's). */
export interface WalDestination {
  /** Stores one file's bytes; rejects when the destination is down (the file then stays in the spool). */
  store(
    serviceId: string,
    name: string,
    bytes: Readable,
    signal: AbortSignal,
  ): Promise<{ localPath: string | null; objectKey: string | null; storageId: string | null; sizeBytes: number; checksum: string }>;
  /** Removes a stored file (past the retention) from where it was stored; rejects when that place is down. */
  remove(stored: { localPath: string | null; objectKey: string | null; storageId: string | null }, signal: AbortSignal): Promise<void>;
}

/**
 * One shipping pass of a database's WAL spool (docs/backups.md, Point-in-time recovery): each finished
 * file, oldest first, stored at the destination, recorded in the archive, then removed from the spool.
 * The first file the destination refuses ends the pass: it and those after it stay in the spool (the
 * database never waits on this), the settings record what waits and why, and the next pass tries again.
 * Not wired to a loop yet: see docs/backups.md, What is left.
 */
export class WalShipper {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly spool: WalSpool,
    private readonly destinationOf: (settings: PitrSettingsRecord) => Promise<WalDestination>,
    /** The database's running container; null when it is not running. */
    private readonly locate: (serviceId: string) => Promise<string | null>,
  ) {}

  async ship(settings: PitrSettingsRecord, signal: AbortSignal): Promise<{ shipped: number; waiting: number; error: string | null }> {
    const now = () => this.deps.clock.now();
    const containerId = await this.locate(settings.serviceId);
    if (!containerId) {
      await this.record(settings, { lastError: 'The database is not running: its spool is shipped once it runs', checkedAt: now() });
      return { shipped: 0, waiting: settings.pendingSegments, error: 'not running' };
    }
    const files = await this.spool.list(containerId, signal);
    const shipped: string[] = [];
    let error: string | null = null;
    const destination = await this.destinationOf(settings);
    for (const file of files) {
      try {
        const { stream, done } = await this.spool.read(containerId, file.name, signal);
        const stored = await destination.store(settings.serviceId, file.name, stream, signal);
        await done;
        await this.deps.store.pitr
          .insertSegment({
            id: newId(),
            serviceId: settings.serviceId,
            name: file.name,
            timeline: timelineOf(file.name),
            walBytes: file.bytes,
            sizeBytes: stored.sizeBytes,
            checksum: stored.checksum,
            completedAt: file.completedAt,
            storedAt: now(),
            localPath: stored.localPath,
            objectKey: stored.objectKey,
            storageId: stored.storageId,
          })
          // Shipped before, its removal from the spool cut off: the row is there already.
          .catch((e: unknown) => {
            if (!(e instanceof ConflictError)) throw e;
          });
        shipped.push(file.name);
      } catch (e) {
        if (signal.aborted) throw e;
        error = `WAL ${file.name} was not stored: ${(e as Error).message}`;
        break;
      }
    }
    if (shipped.length > 0) await this.spool.remove(containerId, shipped, signal);
    const waiting = files.slice(shipped.length);
    await this.record(settings, {
      pendingSegments: waiting.length,
      pendingBytes: waiting.reduce((sum, f) => sum + f.bytes, 0),
      oldestPendingAt: waiting[0]?.completedAt ?? null,
      ...(shipped.length > 0 ? { lastShippedAt: now() } : {}),
      lastError: error,
      checkedAt: now(),
    });
    return { shipped: shipped.length, waiting: waiting.length, error };
  }

  private async record(settings: PitrSettingsRecord, patch: Partial<PitrSettingsRecord>): Promise<void> {
    const current = (await this.deps.store.pitr.getSettings(settings.serviceId)) ?? settings;
    await this.deps.store.pitr.putSettings({ ...current, ...patch, updatedAt: current.updatedAt });
  }
}
