import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import type { BackupFormat, DatabaseDump, DumpTarget, RunningDump } from '../../src/index.js';
import { ClickHouseDump } from './clickhouse.database-dump.js';
import { ContainerExec } from './container-exec.js';
import type { DumpFamily } from './dump-family.js';
import { MongoDump } from './mongodb.database-dump.js';
import { MysqlDump } from './mysql.database-dump.js';
import { PostgresDump } from './postgres.database-dump.js';
import { RedisDump } from './redis.database-dump.js';

/** Each engine's family: PostgreSQL's tools serve TimescaleDB too; MySQL's are MariaDB's as well. */
const FAMILIES: Record<DumpTarget['engine'], DumpFamily> = {
  postgres: PostgresDump,
  timescale: PostgresDump,
  mysql: MysqlDump,
  redis: RedisDump,
  clickhouse: ClickHouseDump,
  mongodb: MongoDump,
};

/**
 * Dumps and restores with each engine's own tools, through `docker exec` in the database's container
 * (docs/backups.md, Engines). The bytes stream through; nothing holds a whole dump.
 */
export class DockerExecDatabaseDump implements DatabaseDump {
  constructor(private readonly docker: Docker) {}

  formatOf(engine: DumpTarget['engine']): BackupFormat | null {
    return FAMILIES[engine]?.format ?? null;
  }

  dump(target: DumpTarget, signal: AbortSignal, log: (line: string) => void): Promise<RunningDump> {
    return this.family(target).dump(new ContainerExec(this.docker, target.containerId, signal, log), target.env);
  }

  restore(target: DumpTarget, input: Readable, signal: AbortSignal, log: (line: string) => void): Promise<void> {
    return this.family(target)
      .restore(new ContainerExec(this.docker, target.containerId, signal, log), target.env, input)
      .finally(() => input.destroy());
  }

  private family(target: DumpTarget): DumpFamily {
    const family = FAMILIES[target.engine];
    if (!family) throw new Error(`no dump tool for ${target.engine}`);
    return family;
  }
}

export { DockerStreamDemux } from './container-exec.js';
