import { Transform, type Readable } from 'node:stream';
import { databaseEngineOf } from '../domain/database-engines.js';
import type { ServiceRecord } from '../domain/types.js';
import type { EnvService } from '../env/env.service.js';
import { JobLogWriter } from '../jobs/job-log-writer.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { BackupRestore, RestoreRuntime } from './backup-restore.js';
import type { DatabaseDump, DumpTarget } from './database-dump.port.js';

/** A copy the platform will not make: too large, or a disk too full; the message says which and how much. */
export class CopyRefused extends Error {}

/** The disk database volumes live on: how large it is and how much is free. */
export type DiskUsage = () => Promise<{ totalBytes: number; freeBytes: number } | null>;

export interface CopyLimits {
  maxBytes: number;
  /** A copy that would take the disk past this share of its size is refused (0.9: 90%). */
  maxUsedRatio: number;
  disk: DiskUsage;
}

/** Every so many bytes of a fresh dump the disk is looked at again. */
const DISK_CHECK_BYTES = 64 * 1024 * 1024;

/**
 * Fills one database from another of the same engine (a preview's copy from its parent), with the
 * backups' own tools: the parent's newest succeeded backup, checked against its checksum first, or
 * when it has none a fresh dump streamed straight into the restore. A copy larger than the limit, or
 * one that would take the disk past its share, is refused before (or as soon as) it is known.
 */
export class DatabaseCopy {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly env: EnvService,
    private readonly dump: DatabaseDump | null,
    /** Checks a backup's bytes against its checksum before anything is restored from it. */
    private readonly backups: Pick<BackupRestore, 'verifiedSource'>,
    private readonly runtime: Pick<RestoreRuntime, 'locate'>,
  ) {}

  /** Resolves with where the data came from (`backup <id>` or `a fresh dump`); rejects with CopyRefused or the tool's failure. */
  async copy(
    source: ServiceRecord,
    target: ServiceRecord,
    limits: CopyLimits,
    signal: AbortSignal,
    log: (line: string) => void,
  ): Promise<string> {
    const engine = databaseEngineOf(source);
    if (!engine || engine !== databaseEngineOf(target)) throw new Error('Only a database of the same engine can be copied');
    const dump = this.dump;
    if (!dump?.formatOf(engine)) throw new CopyRefused(`Copying ${engine} databases is not supported: the preview's is left empty`);
    const [sourceContainer, targetContainer] = await Promise.all([this.runtime.locate(source), this.runtime.locate(target)]);
    if (!targetContainer) throw new Error(`${target.name} is not running`);
    const targetEnv = (await this.env.resolvedFor(target)).env;
    const into: DumpTarget = { engine, containerId: targetContainer.containerId, env: targetEnv };
    const writer = new JobLogWriter(async (_stream, lines) => lines.forEach((line) => log(line)));
    writer.mask(...Object.values(targetEnv));

    const backup = (await this.deps.store.backups.list(source.id, 50)).find((b) => b.status === 'succeeded' && b.sizeBytes > 0);
    if (backup) {
      if (backup.sizeBytes > limits.maxBytes)
        throw new CopyRefused(
          `${source.name}'s newest backup is ${backup.sizeBytes} bytes, over the ${limits.maxBytes}-byte limit of a preview's copy`,
        );
      await this.assertRoom(backup.sizeBytes, limits);
      const verified = await this.backups.verifiedSource(backup, signal, writer);
      try {
        log(`Restoring ${source.name}'s backup ${backup.id} (${backup.sizeBytes} bytes, ${backup.checksum}) into ${target.name}`);
        await dump.restore(into, await verified.open(), signal, (line) => writer.write(line, 'stderr'));
      } finally {
        await verified.cleanup();
        await writer.flush();
      }
      return `backup ${backup.id}`;
    }

    if (!sourceContainer) throw new CopyRefused(`${source.name} is not running and has no backup: nothing to copy from`);
    await this.assertRoom(0, limits);
    const sourceEnv = (await this.env.resolvedFor(source)).env;
    writer.mask(...Object.values(sourceEnv));
    log(`${source.name} has no backup: dumping it now, straight into ${target.name}`);
    const controller = new AbortController();
    const both = AbortSignal.any([signal, controller.signal]);
    const running = await dump.dump({ engine, containerId: sourceContainer.containerId, env: sourceEnv }, both, (line) =>
      writer.write(line, 'stderr'),
    );
    let refused: CopyRefused | null = null;
    const limited: Readable = running.stream.pipe(
      new ByteLimit(limits.maxBytes, DISK_CHECK_BYTES, async (bytes) => {
        const problem =
          bytes > limits.maxBytes
            ? `The dump passed the ${limits.maxBytes}-byte limit of a preview's copy`
            : await this.roomProblem(0, limits);
        if (problem) {
          refused = new CopyRefused(problem);
          controller.abort(refused);
        }
        return problem === null;
      }),
    );
    try {
      await Promise.all([running.done, dump.restore(into, limited, both, (line) => writer.write(line, 'stderr'))]);
    } catch (error) {
      throw refused ?? error;
    } finally {
      await writer.flush();
    }
    if (refused) throw refused;
    return 'a fresh dump';
  }

  private async assertRoom(bytes: number, limits: CopyLimits): Promise<void> {
    const problem = await this.roomProblem(bytes, limits);
    if (problem) throw new CopyRefused(problem);
  }

  private async roomProblem(bytes: number, limits: CopyLimits): Promise<string | null> {
    const disk = await limits.disk();
    if (!disk || disk.totalBytes <= 0) return null;
    const used = disk.totalBytes - disk.freeBytes + bytes;
    const ratio = used / disk.totalBytes;
    return ratio > limits.maxUsedRatio
      ? `The copy would take the disk to ${Math.round(ratio * 100)}% of its ${disk.totalBytes} bytes, past the ${Math.round(limits.maxUsedRatio * 100)}% a preview may fill`
      : null;
  }
}

/** Passes bytes through, asking `check` every `every` bytes (and once past `max`) whether to go on. */
class ByteLimit extends Transform {
  private bytes = 0;
  private nextCheck: number;

  constructor(
    private readonly max: number,
    private readonly interval: number,
    private readonly check: (bytes: number) => Promise<boolean>,
  ) {
    super();
    this.nextCheck = interval;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null, data?: Buffer) => void): void {
    this.bytes += chunk.length;
    if (this.bytes <= this.max && this.bytes < this.nextCheck) {
      done(null, chunk);
      return;
    }
    this.nextCheck = this.bytes + this.interval;
    this.check(this.bytes).then(
      (go) => (go ? done(null, chunk) : done(new Error('copy stopped'))),
      (error: Error) => done(error),
    );
  }
}
