import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import type { BackupFormat, CountTarget, DatabaseDump, DumpTarget, EngineCounts, RunningDump } from '../../src/index.js';
import { countClickHouse } from './clickhouse.database-counts.js';
import { countMongo } from './mongodb.database-counts.js';
import { countMysql } from './mysql.database-counts.js';
import { countPostgres } from './postgres.database-counts.js';
import { countRedis } from './redis.database-counts.js';
import { ClickHouseDump } from './clickhouse.database-dump.js';
import { ContainerExec, dockerOf, type DockerOf } from './container-exec.js';
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
  private readonly docker: DockerOf;

  constructor(docker: Docker | DockerOf) {
    this.docker = dockerOf(docker);
  }

  formatOf(engine: DumpTarget['engine']): BackupFormat | null {
    return FAMILIES[engine]?.format ?? null;
  }

  dump(target: DumpTarget, signal: AbortSignal, log: (line: string) => void): Promise<RunningDump> {
    return this.family(target).dump(new ContainerExec(this.docker(target.containerId), target.containerId, signal, log), target.env);
  }

  restore(target: DumpTarget, input: Readable, signal: AbortSignal, log: (line: string) => void): Promise<void> {
    return this.family(target)
      .restore(new ContainerExec(this.docker(target.containerId), target.containerId, signal, log), target.env, input)
      .finally(() => input.destroy());
  }

  /** The drills' check: each engine family counts with its own means (docs/backups.md, Restore drills). */
  count(target: CountTarget, signal: AbortSignal, log: (line: string) => void): Promise<EngineCounts> {
    const exec = new ContainerExec(this.docker(target.containerId), target.containerId, signal, log);
    switch (target.engine) {
      case 'postgres':
      case 'timescale':
        return countPostgres(exec, target.env);
      case 'mysql':
        return countMysql(exec, target.env);
      case 'redis':
        return countRedis(exec, target.env);
      case 'clickhouse':
        return countClickHouse(exec, target.env);
      case 'mongodb':
        return countMongo(target.host, target.env, signal);
    }
  }

  private family(target: DumpTarget): DumpFamily {
    const family = FAMILIES[target.engine];
    if (!family) throw new Error(`no dump tool for ${target.engine}`);
    return family;
  }
}

export { DockerStreamDemux } from './container-exec.js';
