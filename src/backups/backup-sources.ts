import type { ServiceRecord } from '../domain/types.js';
import type { JobLogWriter } from '../jobs/job-log-writer.js';
import type { BackupKind, BackupRecord } from './backup.records.js';
import type { DatabaseDump, EngineCounts, RunningDump } from './database-dump.port.js';
import { expectationOf } from './drill-counts.js';

/** A failure the user can act on: its message is the backup's `error` as is. */
export class BackupFailure extends Error {}

export interface SourceContext {
  backup: BackupRecord;
  service: ServiceRecord;
  /** The service's resolved env (its passwords are masked in the log already). */
  env: Record<string, string>;
  signal: AbortSignal;
  log: JobLogWriter;
}

/** A backup's bytes under way, and what to record on it once they are stored. */
export interface OpenedSource extends RunningDump {
  /** Called once every byte is stored: fields of the backup to record (its counts, a base backup's first WAL file). */
  finish(): Promise<Partial<Pick<BackupRecord, 'counts' | 'walStart'>>>;
  /** Undoes what the source changed to read (a service stopped for its snapshot starts again); runs however the backup ended. */
  release?(): Promise<void>;
}

/** Where one kind of backup's bytes come from: a database's dump, a volume's tar, a base backup. */
export interface BackupSource {
  open(context: SourceContext): Promise<OpenedSource>;
}

export type BackupSources = Partial<Record<BackupKind, BackupSource>>;

/** Where a database runs: its container, and its address (the engines counted over the wire). */
export type Locate = (service: ServiceRecord) => Promise<{ containerId: string; host?: string | null } | null>;

/**
 * A database's dump with the engine's own tool, counted before and after with the engine's own means
 * (the drill's expectation: docs/backups.md, Restore drills). A count that fails is logged and leaves the
 * backup without counts; it never fails the backup.
 */
export function dumpSource(dump: DatabaseDump | null, locate: Locate): BackupSource {
  return {
    async open({ backup, service, env, signal, log }) {
      if (!dump) throw new BackupFailure('This platform has no container engine to run the dump in');
      const container = await locate(service);
      if (!container) throw new BackupFailure(`${service.name} is not running: deploy it before backing up`);
      if (!backup.engine) throw new BackupFailure('This backup names no database engine');
      const target = { engine: backup.engine, containerId: container.containerId, env };
      const count = async (when: string): Promise<EngineCounts | null> => {
        if (!dump.count) return null;
        try {
          const counted = await dump.count({ ...target, host: container.host ?? null }, signal, (line) => log.write(line, 'stderr'));
          log.write(`Counted ${when} the dump: ${summary(counted)}`);
          return counted;
        } catch (error) {
          if (signal.aborted) throw error;
          log.write(`Not counted ${when} the dump (a drill will check the restore only): ${(error as Error).message}`, 'stderr');
          return null;
        }
      };
      const before = await count('before');
      const running = await dump.dump(target, signal, (line) => log.write(line, 'stderr'));
      return {
        ...running,
        finish: async () => ({ counts: before ? expectationOf(before, await count('after')) : null }),
      };
    },
  };
}

function summary(counts: EngineCounts): string {
  const entries = Object.entries(counts.counts);
  const total = entries.reduce((sum, [, n]) => sum + n, 0);
  return `${total} ${counts.unit} in ${entries.length} ${counts.unit === 'keys' ? 'logical databases' : counts.unit === 'documents' ? 'collections' : 'tables'}`;
}
