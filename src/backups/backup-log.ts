import { JobLogWriter } from '../jobs/job-log-writer.js';
import type { ServiceDeps } from '../platform/deps.js';

/** A backup's (and its restores') log lines, stored with the backup. */
export class BackupLog {
  constructor(private readonly deps: ServiceDeps) {}

  open(backupId: string): JobLogWriter {
    return new JobLogWriter((stream, lines) => this.append(backupId, stream, ...lines));
  }

  append(backupId: string, stream: 'stdout' | 'stderr', ...lines: string[]): Promise<unknown> {
    const createdAt = this.deps.clock.now();
    return this.deps.store.backups.appendLogs(
      backupId,
      lines.map((line) => ({ line, stream, createdAt })),
    );
  }
}
