import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { BackupFiles } from '../../src/index.js';

const PARTIAL = '.partial';

/** Backup files under one directory: `<dir>/<serviceId>/<name>`, written as `<name>.partial` until done. */
export class DiskBackupFiles implements BackupFiles {
  constructor(private readonly dir: string) {}

  pathOf(serviceId: string, name: string): string {
    return path.join(path.resolve(this.dir), serviceId, name);
  }

  async create(file: string): Promise<Writable> {
    await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    const out = createWriteStream(file + PARTIAL, { mode: 0o600, highWaterMark: 1 << 20 });
    await new Promise<void>((resolve, reject) => {
      out.once('open', () => resolve());
      out.once('error', reject);
    });
    return out;
  }

  async commit(file: string): Promise<void> {
    await rename(file + PARTIAL, file);
  }

  read(file: string): Readable {
    return createReadStream(file, { highWaterMark: 1 << 20 });
  }

  async size(file: string): Promise<number | null> {
    try {
      return (await stat(file)).size;
    } catch {
      return null;
    }
  }

  async remove(file: string): Promise<void> {
    await rm(file, { force: true });
    await rm(file + PARTIAL, { force: true });
  }
}
