import { randomBytes } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { bytesOf, type ContainerExec } from './container-exec.js';
import type { DumpFamily } from './dump-family.js';

/** The end mark of a diskless transfer (RDB_EOF_MARK_SIZE), which `redis-cli --rdb -` leaves on stdout. */
const EOF_MARK_BYTES = 40;
const RESTART_GRACE_SECONDS = 30;
const READY_TIMEOUT_MS = 10 * 60_000;
const SAVE_WAIT_MS = 10 * 60_000;

/**
 * Redis: the dump is an RDB snapshot (`redis-cli --rdb -`, the replication protocol's full sync, so
 * the server forks and streams it: nothing is written to its disk); the password in REDISCLI_AUTH.
 *
 * The restore swaps the RDB in with a restart. The platform runs Redis with `--appendonly yes`, and
 * a server with AOF on loads only its AOF at start (an RDB beside it is ignored; with no AOF at all it
 * starts empty: seen on Redis 7.0, and what 7.4's loadDataFromDisk does too). So the RDB becomes the
 * base of a fresh multi-part AOF (Redis 7.0+): `<appenddirname>/<appendfilename>.1.base.rdb` and a
 * manifest naming only it, which Redis loads at start and appends to after (`dbfilename` is linked to
 * the same file, for a server started with AOF off). Steps: stage and check the file (redis-check-rdb;
 * nothing is touched when it fails), turn AOF and saves off (no rewrite or save may write the old data
 * over the swap), swap the directories, restart the container (`docker restart`: its command, env and
 * mounts are unchanged), wait until it answers PING with AOF on, remove the old directory.
 */
export const RedisDump: DumpFamily = {
  format: 'rdb',
  async dump(exec, env) {
    const cmd = ['redis-cli', '--rdb', '-'];
    exec.log(`Running ${cmd.join(' ')} in the database's container`);
    const run = await exec.stream(cmd, { env: auth(env) });
    // The size redis-cli reports on stderr, read once its stdout ended.
    const trim = new RdbEofMarkTrim(() => transferredBytes(run.stderr()));
    const piped = pipeline(run.stdout, trim);
    piped.catch(() => undefined);
    const done = Promise.all([run.done, piped]).then(() => undefined);
    done.catch(() => undefined);
    return { stream: trim, done };
  },

  async restore(exec, env, input) {
    const cli = new RedisCli(exec, env);
    const dir = await cli.config('dir');
    const aofDir = `${dir}/${await cli.config('appenddirname')}`;
    const aofName = await cli.config('appendfilename');
    const rdbFile = `${dir}/${await cli.config('dbfilename')}`;
    const tag = randomBytes(4).toString('hex');
    const staging = `${aofDir}.slipway-restore-${tag}`;
    const previous = `${aofDir}.slipway-previous-${tag}`;
    const base = `${aofName}.1.base.rdb`;

    exec.log(`Staging the snapshot as ${staging}/${base}`);
    await exec.run(['mkdir', '-m', '700', staging]);
    try {
      await exec.run(['dd', `of=${staging}/${base}`, 'bs=1M', 'status=none'], { stdin: input });
      await exec.run(['dd', `of=${staging}/${aofName}.manifest`, 'status=none'], { stdin: bytesOf(`file ${base} seq 1 type b\n`) });
      await exec.run(['chmod', '600', `${staging}/${base}`, `${staging}/${aofName}.manifest`]);
      await exec.run(['mkdir', '-p', aofDir]);
      await exec.run(['chown', '-R', `--reference=${aofDir}`, staging]);
      exec.log('Checking the snapshot with redis-check-rdb');
      await exec.run(['redis-check-rdb', `${staging}/${base}`]);
    } catch (error) {
      await exec.run(['rm', '-rf', staging]).catch(() => undefined);
      throw error;
    }

    // From here the server is changed: the request going away must not leave it half swapped.
    const steady = exec.withSignal(AbortSignal.timeout(READY_TIMEOUT_MS + SAVE_WAIT_MS));
    const steadyCli = new RedisCli(steady, env);
    const save = await steadyCli.config('save');
    exec.log('Turning AOF rewrites and RDB saves off until the restart');
    await steadyCli.set('appendonly', 'no');
    await steadyCli.set('save', '');
    let swapped = false;
    try {
      await steadyCli.waitForNoChild();
      await steady.run(['mv', '-T', aofDir, previous]);
      swapped = true;
      await steady.run(['mv', '-T', staging, aofDir]);
      await steady.run(['ln', '-f', `${aofDir}/${base}`, rdbFile]);
    } catch (error) {
      // Back as it was: the old files, AOF on (a rewrite from memory, which still holds the old data).
      if (swapped) await steady.run(['mv', '-T', previous, aofDir]).catch(() => undefined);
      await steady.run(['rm', '-rf', staging]).catch(() => undefined);
      await steadyCli.set('save', save).catch(() => undefined);
      await steadyCli.set('appendonly', 'yes').catch(() => undefined);
      throw error;
    }
    exec.log('Restarting the container to load the snapshot');
    await steady.restart(RESTART_GRACE_SECONDS);
    try {
      const keys = await steadyCli.waitReady();
      exec.log(`Redis is back with the restored data (${keys}), AOF on`);
    } catch (error) {
      throw new Error(
        `Redis did not come back after the snapshot was swapped in: ${(error as Error).message}; its previous files are kept in ${previous}`,
      );
    }
    await steady.run(['rm', '-rf', previous]);
  },
};

function auth(env: Record<string, string>): Record<string, string> {
  return env.REDIS_PASSWORD ? { REDISCLI_AUTH: env.REDIS_PASSWORD } : {};
}

/** redis-cli in the container, one command per exec; the password in REDISCLI_AUTH. */
export class RedisCli {
  constructor(
    private readonly exec: ContainerExec,
    private readonly env: Record<string, string>,
  ) {}

  /** A command's reply (`--raw`); an error reply is thrown (redis-cli itself may exit 0 on one). */
  async call(...args: string[]): Promise<string> {
    const out = await this.exec.run(['redis-cli', '--raw', ...args], { env: auth(this.env) });
    if (/^(ERR|NOAUTH|WRONGPASS|LOADING|MISCONF|NOPERM|BUSY)\b/.test(out)) throw new Error(`redis-cli ${args[0]}: ${out.trim()}`);
    return out;
  }

  async config(name: string): Promise<string> {
    const lines = (await this.call('CONFIG', 'GET', name)).split('\n');
    if (lines[0] !== name || lines[1] === undefined)
      throw new Error(`this Redis has no ${name} setting (the restore needs Redis 7.0 or later, for its multi-part AOF)`);
    return lines[1];
  }

  async set(name: string, value: string): Promise<void> {
    const out = (await this.call('CONFIG', 'SET', name, value)).trim();
    if (out !== 'OK') throw new Error(`CONFIG SET ${name}: ${out}`);
  }

  async info(section: string): Promise<Record<string, string>> {
    const out = await this.call('INFO', section);
    return Object.fromEntries(
      out.split(/\r?\n/).flatMap((line) => {
        const at = line.indexOf(':');
        return at > 0 && !line.startsWith('#') ? [[line.slice(0, at), line.slice(at + 1)]] : [];
      }),
    );
  }

  /** No background save or AOF rewrite runs: none can write its file over the swap. */
  async waitForNoChild(): Promise<void> {
    const deadline = Date.now() + SAVE_WAIT_MS;
    for (;;) {
      const info = await this.info('persistence');
      if (info.rdb_bgsave_in_progress === '0' && info.aof_rewrite_in_progress === '0') return;
      if (Date.now() > deadline) throw new Error('a background save still runs; try the restore again once it ended');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /** PING answers (not LOADING) after the restart, with AOF on; resolves with the keyspace. */
  async waitReady(): Promise<string> {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    let last = '';
    for (;;) {
      try {
        if ((await this.call('PING')).trim() === 'PONG') {
          const persistence = await this.info('persistence');
          if (persistence.aof_enabled !== '1') throw new Error('AOF is off after the restart');
          const keyspace = await this.info('keyspace');
          return (
            Object.entries(keyspace)
              .map(([db, stats]) => `${db} ${stats}`)
              .join('; ') || 'no keys'
          );
        }
      } catch (error) {
        last = (error as Error).message;
        if (/AOF is off/.test(last)) throw error;
      }
      if (Date.now() > deadline) throw new Error(`no answer to PING in ${READY_TIMEOUT_MS / 1000} s (${last})`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/** The payload size redis-cli reports on stderr once the transfer ended. */
export function transferredBytes(stderr: string): number | null {
  const all = [...stderr.matchAll(/Transfer finished with success after (\d+) bytes/g)];
  const last = all.at(-1);
  return last ? Number(last[1]) : null;
}

/**
 * `redis-cli --rdb -` writes a diskless transfer's 40-byte end mark after the RDB (it truncates it
 * away only from a file). The last 40 bytes are held back; at the end they are dropped when the size
 * redis-cli reports says the payload ended before them, passed on when it counts them, and anything
 * else fails the dump. Chunks pass as they are (views), never copied whole.
 */
export class RdbEofMarkTrim extends Transform {
  private held: Buffer = Buffer.alloc(0);
  private total = 0;

  constructor(private readonly payloadBytes: () => number | null) {
    super({ highWaterMark: 1 << 20 });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.total += chunk.length;
    if (chunk.length >= EOF_MARK_BYTES) {
      if (this.held.length > 0) this.push(this.held);
      this.push(chunk.subarray(0, chunk.length - EOF_MARK_BYTES));
      this.held = chunk.subarray(chunk.length - EOF_MARK_BYTES);
    } else {
      const joined = Buffer.concat([this.held, chunk]);
      const keep = Math.max(0, joined.length - EOF_MARK_BYTES);
      if (keep > 0) this.push(joined.subarray(0, keep));
      this.held = joined.subarray(keep);
    }
    callback();
  }

  override _flush(callback: TransformCallback): void {
    const payload = this.payloadBytes();
    if (payload === null) callback(new Error('redis-cli did not report the end of the transfer'));
    else if (payload === this.total) callback(null, this.held);
    else if (payload === this.total - EOF_MARK_BYTES) callback();
    else callback(new Error(`redis-cli reported ${payload} bytes, and ${this.total} arrived: the snapshot is incomplete`));
  }
}
