import { PassThrough, Readable, Writable } from 'node:stream';
import type { BackupFiles, DatabaseDump, DumpTarget, ObjectStore } from '../../src/index.js';
import { errorOf as refusal } from './caller-errors.js';
import type { Harness } from './harness.js';

/**
 * What the backup use-case and router tests share: fakes of the backup ports (the adapters run for real in
 * test/e2e/backups.test.ts), a database service to back up, and the error body of a refused call.
 */

/** A project with one database service of `engine`, made through the router. */
export async function databaseService(h: Harness, engine = 'postgres') {
  const api = h.caller();
  const { project } = await api.projects.create({ name: `P ${Math.random()}` });
  const { service } = await api.services.create({
    projectId: project.id,
    name: 'main db',
    repoUrl: 'database',
    repoFullName: `database:${engine}`,
    branch: 'main',
  });
  return { project, service };
}

/** The `{error, message, details}` body of a call that must be refused. */
export async function errorOf(promise: Promise<unknown>): Promise<{ error: string; message: string; details: Record<string, unknown> }> {
  return (await refusal(promise)).body as never;
}

export const DUMP = Buffer.concat([Buffer.from('PGDMP'), Buffer.alloc(300_000, 42), Buffer.from('secret-password-xyz')]);

/** Each engine's format, as the docker-exec adapter has them (docs/backups.md, Engines). */
export const FORMATS = {
  postgres: 'custom',
  timescale: 'custom',
  mysql: 'sql',
  redis: 'rdb',
  clickhouse: 'native',
  mongodb: 'archive',
} as const;
export const EXTENSIONS = { custom: 'dump', sql: 'sql', rdb: 'rdb', native: 'chnative', archive: 'archive' } as const;

export class FakeDump implements DatabaseDump {
  restored: Buffer[] = [];
  targets: DumpTarget[] = [];
  failWith: string | null = null;
  /** Engines this fake has no tool for (the platform answers 422 for them). */
  unsupported = new Set<string>();
  formatOf(engine: DumpTarget['engine']) {
    return this.unsupported.has(engine) ? null : FORMATS[engine];
  }
  async dump(target: DumpTarget, _signal: AbortSignal, log: (line: string) => void) {
    this.targets.push(target);
    log(`pg_dump connecting as ${target.env.POSTGRES_USER} with ${target.env.POSTGRES_PASSWORD}`);
    const chunks = [DUMP.subarray(0, 100_000), DUMP.subarray(100_000)];
    const fail = this.failWith;
    return {
      stream: Readable.from(chunks),
      done: fail ? Promise.reject(new Error(fail)) : Promise.resolve(),
    };
  }
  async restore(_target: DumpTarget, input: Readable) {
    const parts: Buffer[] = [];
    for await (const chunk of input) parts.push(chunk as Buffer);
    this.restored.push(Buffer.concat(parts));
  }
}

export class MemoryFiles implements BackupFiles {
  readonly files = new Map<string, Buffer>();
  pathOf(serviceId: string, name: string) {
    return `/backups/${serviceId}/${name}`;
  }
  async create(path: string): Promise<Writable> {
    const parts: Buffer[] = [];
    return new Writable({
      write: (chunk, _enc, cb) => {
        parts.push(chunk);
        cb();
      },
      final: (cb) => {
        this.files.set(`${path}.partial`, Buffer.concat(parts));
        cb();
      },
    });
  }
  async commit(path: string) {
    this.files.set(path, this.files.get(`${path}.partial`)!);
    this.files.delete(`${path}.partial`);
  }
  read(path: string) {
    return Readable.from([this.files.get(path)!]);
  }
  async size(path: string) {
    return this.files.get(path)?.length ?? null;
  }
  async remove(path: string) {
    this.files.delete(path);
    this.files.delete(`${path}.partial`);
  }
}

export class MemoryObjectStore implements ObjectStore {
  readonly objects = new Map<string, Buffer>();
  down = false;
  async check() {
    if (this.down) throw new Error('connect ECONNREFUSED 127.0.0.1:9');
  }
  async upload(key: string, body: Readable) {
    if (this.down) {
      body.destroy();
      throw new Error('object store upload failed: connect ECONNREFUSED 127.0.0.1:9');
    }
    const parts: Buffer[] = [];
    for await (const chunk of body) parts.push(chunk as Buffer);
    this.objects.set(key, Buffer.concat(parts));
  }
  async download(key: string) {
    const pass = new PassThrough();
    pass.end(this.objects.get(key));
    return pass;
  }
  async remove(key: string) {
    this.objects.delete(key);
  }
}
