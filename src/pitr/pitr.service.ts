import { assertWrite, type Actor } from '../domain/access.js';
import type { DatabaseEngine } from '../domain/database-engines.js';
import { ConflictError, NotFoundError, NotSupportedError, OutsideWindowError, ValidationError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { ServiceRecord } from '../domain/types.js';
import { storageOf } from '../domain/storage-server.js';
import { databaseFor } from '../backups/backup-targets.js';
import { parseCron } from '../backups/cron.js';
import type { ObjectStoreConfig } from '../backups/object-store.port.js';
import type { ServiceDeps } from '../platform/deps.js';
import { serviceOfKind } from '../platform/lookup.js';
import {
  type PitrRestoreLogLineView,
  type PitrRestoreView,
  type PitrView,
  presentPitr,
  presentPitrRestore,
  presentPitrRestoreLog,
  presentWindow,
} from './pitr-views.js';
import { type ArchiveLag, baseFor, lagOf, windowOf } from './pitr-window.js';
import type { PitrRestoreInput, PitrSettingsInput } from './pitr.inputs.js';
import { DEFAULT_BASE_SCHEDULE, DEFAULT_RETENTION_DAYS, type PitrRestoreRecord, type PitrSettingsRecord } from './pitr.records.js';

/** A restore's log answered at most this many lines (the backups' logs' bound). */
const LOG_LINES_MAX = 5_000;

/** The engines whose WAL the platform archives: PostgreSQL and TimescaleDB (a PostgreSQL extension). */
const PITR_ENGINES: readonly DatabaseEngine[] = ['postgres', 'timescale'];

/** Runs a queued point-in-time restore (the recovery into a new service, or over the original with `replace`). */
export interface PitrRestoreRunner {
  /** Wakes the runner: the restore is in the table, `queued`. */
  wake(): void;
  /**
   * Makes the new database service a restore fills, in the original's project and environment, with the
   * original's credentials (the recovered data keeps its roles): created with the caller's rights, not deployed.
   */
  createTarget(actor: Actor, original: ServiceRecord, at: Date): Promise<ServiceRecord>;
}

export interface PitrLimits {
  /** The archive is shown lagging when its oldest waiting segment has waited longer than this. */
  lagLimitSeconds: number;
}

export const DEFAULT_PITR_LIMITS: PitrLimits = { lagLimitSeconds: 300 };

/** Where point-in-time recovery may send its WAL and base backups: the install's object store, or a storage instance's. */
export interface PitrDestinations {
  configOf(storageId: string | null): Promise<ObjectStoreConfig | null>;
}

/**
 * Point-in-time recovery of a PostgreSQL or TimescaleDB service (docs/backups.md, Point-in-time recovery):
 * its settings, what its archive can reach (the window, the lag, the last base backup), and restores to
 * a second of that window. The window and retention rules are pure functions (pitr-window.ts); the
 * archive's rows are the persistence layer's (PitrRepository).
 */
export class PitrService {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly destinations: PitrDestinations,
    /** null: this install runs no restores (answered 422 `not_supported`, before anything is recorded). */
    private readonly runner: PitrRestoreRunner | null,
    private readonly limits: PitrLimits = DEFAULT_PITR_LIMITS,
    /** Whether this install ships WAL and takes base backups (a container engine runs the archiver). */
    private readonly archiving = runner !== null,
  ) {}

  /** `GET .../database/pitr`: the settings, the window, the archive's lag and the last base backup. */
  async get(actor: Actor, serviceId: string): Promise<PitrView> {
    const { service } = await this.pitrDatabase(actor, serviceId);
    return this.view(service.id);
  }

  /**
   * `PUT .../database/pitr`: `storage` `disk`, `object` (the install's object store, which must be set) or
   * a storage instance's id, each a 400 on `storage` when it cannot be used; the base-backup slot kept
   * unless the settings are new or were off.
   */
  async put(actor: Actor, serviceId: string, input: PitrSettingsInput): Promise<PitrView> {
    assertWrite(actor);
    const { service } = await this.pitrDatabase(actor, serviceId);
    const { storage, storageId } = await this.storageOf(actor, input.storage ?? 'disk');
    // Without the archiver, "enabled" would promise a window that never comes.
    if (input.enabled && !this.archiving)
      throw new NotSupportedError(
        'Point-in-time recovery cannot be turned on here: this install runs no container engine to archive WAL with (scheduled dumps and restore drills protect the database meanwhile)',
        { field: 'enabled' },
      );
    const now = this.deps.clock.now();
    const previous = await this.deps.store.pitr.getSettings(service.id);
    const baseSchedule = previous?.baseSchedule ?? DEFAULT_BASE_SCHEDULE;
    const keepSlot = previous?.enabled && previous.baseSchedule === baseSchedule;
    const settings: PitrSettingsRecord = {
      serviceId: service.id,
      enabled: input.enabled,
      storage,
      storageId,
      retentionDays: input.retentionDays ?? previous?.retentionDays ?? DEFAULT_RETENTION_DAYS,
      baseSchedule,
      nextBaseAt: keepSlot ? previous.nextBaseAt : (parseCron(baseSchedule).next(now) ?? now),
      pendingSegments: previous?.pendingSegments ?? 0,
      pendingBytes: previous?.pendingBytes ?? 0,
      oldestPendingAt: previous?.oldestPendingAt ?? null,
      lastShippedAt: previous?.lastShippedAt ?? null,
      lastError: previous?.lastError ?? null,
      checkedAt: previous?.checkedAt ?? null,
      dataVolume: previous?.dataVolume ?? null,
      createdAt: previous?.createdAt ?? now,
      updatedAt: now,
    };
    await this.deps.store.pitr.putSettings(settings);
    return this.view(service.id);
  }

  /**
   * `POST .../database/pitr/restore {at, replace?, confirm?}`: a second of the window, restored into a new
   * database service beside the original (over it only with `replace` and `confirm` naming the service).
   * An `at` in the future or before the window is a 422 `outside_window` that gives the window.
   */
  async restore(actor: Actor, serviceId: string, input: PitrRestoreInput): Promise<PitrRestoreView> {
    assertWrite(actor);
    const { service } = await this.pitrDatabase(actor, serviceId);
    if (input.replace && input.confirm !== service.name)
      throw new ValidationError('confirm', `replace: true overwrites ${service.name}: confirm must be its name, exactly`);
    const at = new Date(input.at);
    const now = this.deps.clock.now();
    const segments = await this.deps.store.pitr.segments(service.id);
    const bases = await this.deps.store.backups.listOf(service.id, 'base');
    const window = windowOf(bases, segments);
    const base = at.getTime() <= now.getTime() ? baseFor(at, bases, segments) : null;
    if (!window || !base)
      throw new OutsideWindowError(
        window
          ? `${input.at} is outside the recoverable window, ${window.earliest.toISOString()} to ${window.latest.toISOString()}`
          : `${input.at} cannot be reached: ${service.name}'s archive holds no base backup with its WAL yet`,
        { at: input.at, window: window ? presentWindow(window) : null },
      );
    if (!this.runner) throw new NotSupportedError('This install runs no point-in-time restores (no container engine to recover in)', {});
    // One in-place restore at a time: a second would swap the database under the first.
    if (
      input.replace &&
      (await this.deps.store.pitr.restoresOf(service.id, 50)).some((r) => r.replace && (r.status === 'queued' || r.status === 'running'))
    )
      throw new ConflictError(`An in-place restore of ${service.name} is under way: wait for it to end`, { field: 'replace' });
    // In place, the restore fills a new volume of the original and swaps it on only once that succeeded.
    const targetServiceId = input.replace ? service.id : (await this.runner.createTarget(actor, service, at)).id;
    const restore: PitrRestoreRecord = {
      id: newId(),
      serviceId: service.id,
      targetServiceId,
      at,
      replace: input.replace ?? false,
      status: 'queued',
      previousVolume: null,
      baseBackupId: base.id,
      reachedAt: null,
      error: null,
      abortRequested: false,
      createdAt: now,
      startedAt: null,
      finishedAt: null,
    };
    await this.deps.store.pitr.insertRestore(restore);
    this.runner.wake();
    return presentPitrRestore(restore);
  }

  /**
   * `GET .../pitr/restores/:restoreId/logs`: each step of a restore (the checks, PostgreSQL's recovery, the
   * second reached, an in-place swap), secrets masked; 404 for a restore not made from this database.
   */
  async logs(actor: Actor, serviceId: string, restoreId: string): Promise<PitrRestoreLogLineView[]> {
    const { service } = await this.pitrDatabase(actor, serviceId);
    const restore = await this.deps.store.pitr.getRestore(restoreId);
    if (!restore || restore.serviceId !== service.id) throw new NotFoundError('Point-in-time restore', restoreId);
    return (await this.deps.store.pitr.logs(restore.id, LOG_LINES_MAX)).map((l) => presentPitrRestoreLog(restore.id, l));
  }

  private async view(serviceId: string): Promise<PitrView> {
    const settings = await this.deps.store.pitr.getSettings(serviceId);
    const segments = await this.deps.store.pitr.segments(serviceId);
    const bases = await this.deps.store.backups.listOf(serviceId, 'base');
    const lag: ArchiveLag = settings
      ? lagOf(settings, this.deps.clock.now(), this.limits.lagLimitSeconds)
      : { pendingSegments: 0, pendingBytes: 0, seconds: 0, lagging: false, lastShippedAt: null, lastError: null };
    return presentPitr(serviceId, settings, {
      window: windowOf(bases, segments),
      lag,
      lastBase: bases.find((b) => b.status === 'succeeded') ?? null,
      segments: segments.length,
      bytes: segments.reduce((sum, s) => sum + s.sizeBytes, 0),
      restores: await this.deps.store.pitr.restoresOf(serviceId, 10),
    });
  }

  /** A PostgreSQL or TimescaleDB service the caller sees: 404 for anything else that is no database, 422 for another engine. */
  private async pitrDatabase(actor: Actor, serviceId: string): Promise<{ service: ServiceRecord; engine: DatabaseEngine }> {
    const found = await databaseFor(this.deps.store, actor, serviceId);
    if (!PITR_ENGINES.includes(found.engine))
      throw new NotSupportedError(`Point-in-time recovery is for PostgreSQL and TimescaleDB databases, not ${found.engine}`, {
        engine: found.engine,
      });
    return found;
  }

  private async storageOf(actor: Actor, storage: string): Promise<Pick<PitrSettingsRecord, 'storage' | 'storageId'>> {
    if (storage === 'disk') return { storage: 'disk', storageId: null };
    if (storage === 'object') {
      if (!(await this.destinations.configOf(null)))
        throw new ValidationError(
          'storage',
          'storage object needs the object store of the backup settings: set objectStore with PUT /api/settings',
        );
      return { storage: 'object', storageId: null };
    }
    await serviceOfKind(this.deps.store, actor, storage, 'Storage instance', (s) => storageOf(s) !== null).catch((error: unknown) => {
      throw error instanceof NotFoundError ? new ValidationError('storage', `There is no storage instance ${storage}`) : error;
    });
    return { storage: 'object', storageId: storage };
  }
}
