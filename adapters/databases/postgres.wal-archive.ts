import { Transform, type TransformCallback } from 'node:stream';
import type Docker from 'dockerode';
import type { DumpTarget, RunningDump, SpooledFile, WalSpool } from '../../src/index.js';
import { WAL_FILE_NAME, WAL_SPOOL_DIR } from '../../src/index.js';
import { ContainerExec } from './container-exec.js';
import { dumpWith } from './dump-family.js';

/** What backup_label's first entry of a base backup tar may take: the label is a few hundred bytes. */
const LABEL_MAX = 64 * 1024;

const user = (env: Record<string, string>) => env.POSTGRES_USER ?? 'postgres';
const password = (env: Record<string, string>) => ({ PGPASSWORD: env.POSTGRES_PASSWORD ?? '' });

/**
 * A PostgreSQL container's WAL spool (docs/backups.md, Point-in-time recovery) read, listed and emptied
 * with coreutils and findutils in the container, and base backups with its own pg_basebackup.
 */
export class PostgresWalSpool implements WalSpool {
  constructor(private readonly docker: Docker) {}

  private exec(containerId: string, signal: AbortSignal, log: (line: string) => void = () => undefined): ContainerExec {
    return new ContainerExec(this.docker, containerId, signal, log);
  }

  async list(containerId: string, signal: AbortSignal): Promise<SpooledFile[]> {
    const out = await this.exec(containerId, signal).run([
      'find',
      WAL_SPOOL_DIR,
      '-maxdepth',
      '1',
      '-type',
      'f',
      '-printf',
      '%f %s %T@\\n',
    ]);
    return out
      .split('\n')
      .map((line) => line.split(' '))
      .filter(([name]) => name !== undefined && WAL_FILE_NAME.test(name))
      .map(([name, size, mtime]) => ({ name: name!, bytes: Number(size), completedAt: new Date(Math.round(Number(mtime) * 1000)) }))
      .sort((a, b) => a.completedAt.getTime() - b.completedAt.getTime() || (a.name < b.name ? -1 : 1));
  }

  async read(containerId: string, name: string, signal: AbortSignal) {
    if (!WAL_FILE_NAME.test(name)) throw new Error(`not a WAL file name: ${name}`);
    const run = await this.exec(containerId, signal).stream(['cat', `${WAL_SPOOL_DIR}/${name}`]);
    return { stream: run.stdout, done: run.done };
  }

  async remove(containerId: string, names: string[], signal: AbortSignal): Promise<void> {
    for (const name of names) if (!WAL_FILE_NAME.test(name)) throw new Error(`not a WAL file name: ${name}`);
    if (names.length > 0) await this.exec(containerId, signal).run(['rm', '-f', ...names.map((n) => `${WAL_SPOOL_DIR}/${n}`)]);
  }

  /**
   * `pg_basebackup -D - -Ft -X none -c fast` as the service's user over the local socket: one tar on
   * stdout (its backup_manifest appended), WAL left to the archive, which the server waits for before it
   * ends the backup. The first entry, backup_label, names the first segment a restore needs.
   */
  async baseBackup(
    target: DumpTarget,
    signal: AbortSignal,
    log: (line: string) => void,
  ): Promise<RunningDump & { walStart: Promise<string> }> {
    const exec = this.exec(target.containerId, signal, log);
    const running = await dumpWith(
      exec,
      ['pg_basebackup', '-D', '-', '-F', 't', '-X', 'none', '-c', 'fast', '--no-password', '-U', user(target.env), '--label=slipway'],
      { env: password(target.env) },
    );
    const label = new BackupLabelReader();
    running.stream.on('error', (error) => label.destroy(error));
    running.stream.pipe(label);
    return { stream: label, done: running.done, walStart: label.walStart };
  }

  async status(target: DumpTarget, signal: AbortSignal) {
    const out = await this.exec(target.containerId, signal).run(
      [
        'psql',
        '-X',
        '-q',
        '-A',
        '-t',
        '-F',
        '\t',
        '-U',
        user(target.env),
        '-d',
        target.env.POSTGRES_DB ?? 'postgres',
        '-c',
        "SELECT current_setting('archive_mode'), current_setting('archive_command'), failed_count, coalesce(last_failed_wal, '') FROM pg_stat_archiver",
      ],
      { env: password(target.env) },
    );
    const [mode, command, failed, lastFailure] = out.replace(/\n$/, '').split('\t');
    return {
      archiving: mode === 'on' && (command ?? '').includes(WAL_SPOOL_DIR),
      failedCount: Number(failed ?? 0),
      lastFailure: lastFailure || null,
    };
  }
}

/**
 * Passes a base backup's tar through and reads its first entry, backup_label ("START WAL LOCATION:
 * 0/3000028 (file 000000010000000000000003)"): `walStart` resolves with that file's name.
 */
export class BackupLabelReader extends Transform {
  private head: Buffer[] = [];
  private headBytes = 0;
  private settled = false;
  private resolveStart!: (name: string) => void;
  private rejectStart!: (error: Error) => void;
  readonly walStart: Promise<string>;

  constructor() {
    super({ highWaterMark: 1 << 20 });
    this.walStart = new Promise<string>((resolve, reject) => {
      this.resolveStart = resolve;
      this.rejectStart = reject;
    });
    this.walStart.catch(() => undefined);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (!this.settled) {
      this.head.push(chunk);
      this.headBytes += chunk.length;
      this.tryParse(false);
    }
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    if (!this.settled) this.tryParse(true);
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.settled) this.fail(error ?? new Error('the base backup ended before its backup_label'));
    callback(error);
  }

  private tryParse(ended: boolean): void {
    const head = Buffer.concat(this.head);
    if (head.length >= 512) {
      const name = head.subarray(0, 100).toString('utf8').replace(/\0.*$/s, '');
      const size = Number.parseInt(head.subarray(124, 136).toString('ascii').replace(/\0.*$/s, '').trim(), 8);
      if (name !== 'backup_label' && name !== './backup_label') {
        this.fail(new Error(`the base backup does not start with backup_label (${name})`));
        return;
      }
      if (head.length >= 512 + size) {
        const label = head.subarray(512, 512 + size).toString('utf8');
        const file = /START WAL LOCATION: [0-9A-F]+\/[0-9A-F]+ \(file ([0-9A-F]{24})\)/.exec(label)?.[1];
        if (!file) {
          this.fail(new Error('backup_label names no start WAL file'));
          return;
        }
        this.settled = true;
        this.head = [];
        this.resolveStart(file);
        return;
      }
    }
    if (ended || this.headBytes > LABEL_MAX) this.fail(new Error('the base backup ended before its backup_label'));
  }

  private fail(error: Error): void {
    if (this.settled) return;
    this.settled = true;
    this.head = [];
    this.rejectStart(error);
  }
}
