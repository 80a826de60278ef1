#!/usr/bin/env node
/**
 * Stand-ins for MongoDB's `mongodump` and `mongorestore` (the Database Tools), for the mongo:7 stand-in
 * image: no MongoDB tool can be installed where Slipway's tests run. They take the arguments the
 * platform passes to the real tools and speak the wire protocol (OP_MSG, SCRAM-SHA-256) to a server:
 * the wire-protocol stand-in here, or a real mongod. The archive is written in mongodump's archive
 * layout (magic number, prelude of collection metadata, namespace segments, an EOF header per
 * namespace with the CRC-64/ECMA of its documents), uncompressed.
 *
 *   node tools.mjs dump    --archive [--host=H] [--port=P] [--username=U] [--authenticationDatabase=admin]
 *                          [--config=FILE] [--quiet]
 *   node tools.mjs restore --archive [--drop] [--stopOnError] (same connection options)
 *
 * `--archive` without a value is stdout (dump) or stdin (restore); `--archive=FILE` a file. The config
 * file is the tools' YAML (`password: "..."`): the password never needs to be an argument. Progress goes
 * to stderr, as the tools' own lines do; exit status 1 and `Failed: <reason>` on an error.
 *
 * What is dumped: every collection of every database but admin, config and local (the real mongodump
 * also dumps admin's users and roles, which the real mongorestore merges in; the stand-in server keeps
 * its root user apart). What is restored: each collection of the archive, dropped first with --drop,
 * created (empty ones too) and filled with the archive's documents, inserted as they are (raw BSON).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import process from 'node:process';
import { EJSON, Long, deserialize, serialize } from 'bson';

const MAGIC = 0x8199e26d;
const TERMINATOR = 0xffffffff;
const OP_MSG = 2013;
const INSERT_BATCH_BYTES = 8 * 1024 * 1024;
const INSERT_BATCH_DOCS = 10_000;
const SKIPPED_DATABASES = new Set(['admin', 'config', 'local']);
const TOOL_VERSION = '100.9.4-standin';
const CONNECT_TIMEOUT_MS = 30_000;

class UsageError extends Error {}

// ---------------------------------------------------------------------------------------------------
// Arguments, as the tools parse them: `--name=value` or `--name value`; unknown options are an error.

const OPTIONS = {
  dump: new Set(['archive', 'host', 'port', 'username', 'authenticationDatabase', 'config', 'quiet', 'password']),
  restore: new Set(['archive', 'host', 'port', 'username', 'authenticationDatabase', 'config', 'quiet', 'password', 'drop', 'stopOnError']),
};
const FLAGS = new Set(['quiet', 'drop', 'stopOnError']);
const OPTIONAL_VALUE = new Set(['archive']);

export function parseArgs(tool, argv) {
  const known = OPTIONS[tool];
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const match = /^--?([A-Za-z]+)(?:=(.*))?$/s.exec(arg);
    if (!match) throw new UsageError(`error parsing command line options: unexpected argument '${arg}'`);
    const [, name, inline] = match;
    if (!known.has(name)) throw new UsageError(`error parsing command line options: unknown option "${name}"`);
    if (FLAGS.has(name)) {
      if (inline !== undefined) throw new UsageError(`error parsing command line options: --${name} takes no value`);
      out[name] = true;
    } else if (inline !== undefined) out[name] = inline;
    else if (OPTIONAL_VALUE.has(name)) out[name] = '-';
    else if (i + 1 < argv.length) out[name] = argv[++i];
    else throw new UsageError(`error parsing command line options: expected argument for flag '--${name}'`);
  }
  if (out.archive === undefined) throw new UsageError('the stand-in only writes and reads archives: pass --archive');
  if (out.password !== undefined)
    process.stderr.write(warnLine('the password on the command line is visible to other processes; use --config'));
  return out;
}

/** The tools' config file: YAML with `password:` (and `uri:`, which the stand-in refuses). */
export function readConfig(file) {
  const text = fs.readFileSync(file, 'utf8');
  const out = {};
  for (const line of text.split(/\r?\n/)) {
    if (!line.trim() || line.trimStart().startsWith('#')) continue;
    const match = /^([A-Za-z]+):\s*(.*)$/.exec(line);
    if (!match) throw new UsageError(`error parsing the config file ${file}`);
    const [, key, raw] = match;
    if (key !== 'password') throw new UsageError(`the stand-in's config file takes only password, not ${key}`);
    out.password = raw.startsWith('"') ? JSON.parse(raw) : raw.startsWith("'") ? raw.slice(1, -1).replaceAll("''", "'") : raw.trim();
  }
  return out;
}

const stamp = () => new Date().toISOString().replace('Z', '+0000');
const logLine = (text) => `${stamp()}\t${text}\n`;
const warnLine = (text) => `${stamp()}\tWARNING: ${text}\n`;

// ---------------------------------------------------------------------------------------------------
// A wire-protocol client: one connection, OP_MSG commands in order, SCRAM-SHA-256.

class Client {
  constructor(socket) {
    this.socket = socket;
    this.pending = Buffer.alloc(0);
    this.waiters = [];
    this.nextId = 1;
    this.failure = null;
    socket.on('data', (chunk) => {
      this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
      this.drain();
    });
    const fail = (error) => {
      this.failure = error;
      for (const w of this.waiters.splice(0)) w.reject(error);
    };
    socket.on('error', fail);
    socket.on('close', () => fail(new Error('the server closed the connection')));
  }

  static connect(host, port) {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host, port });
      const timer = setTimeout(
        () => socket.destroy(new Error(`could not connect to ${host}:${port} in ${CONNECT_TIMEOUT_MS} ms`)),
        CONNECT_TIMEOUT_MS,
      );
      socket.once('error', (e) => {
        clearTimeout(timer);
        reject(new Error(`could not connect to server ${host}:${port}: ${e.message}`));
      });
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeAllListeners('error');
        resolve(new Client(socket));
      });
    });
  }

  drain() {
    while (this.pending.length >= 4) {
      const size = this.pending.readInt32LE(0);
      if (this.pending.length < size) return;
      const message = this.pending.subarray(0, size);
      this.pending = this.pending.subarray(size);
      const waiter = this.waiters.shift();
      if (waiter) waiter.resolve(message);
    }
  }

  /** Runs one command on `db`; `sequences` are kind-1 sections of raw documents. Rejects on `ok: 0`. */
  async command(db, body, { sequences = [], raw = {} } = {}) {
    if (this.failure) throw this.failure;
    const doc = serialize({ ...body, $db: db });
    // Flag bits (none), then the body as a kind-0 section.
    const parts = [Buffer.from([0, 0, 0, 0, 0]), doc];
    for (const [identifier, docs] of sequences) {
      const name = Buffer.from(`${identifier}\0`, 'utf8');
      const size = 4 + name.length + docs.reduce((n, d) => n + d.length, 0);
      const head = Buffer.alloc(5);
      head[0] = 1;
      head.writeInt32LE(size, 1);
      parts.push(head, name, ...docs);
    }
    const length = 16 + parts.reduce((n, p) => n + p.length, 0);
    const header = Buffer.alloc(16);
    header.writeInt32LE(length, 0);
    header.writeInt32LE(this.nextId++, 4);
    header.writeInt32LE(0, 8);
    header.writeInt32LE(OP_MSG, 12);
    const reply = new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
    this.socket.write(Buffer.concat([header, ...parts], length));
    const message = await reply;
    if (message.readInt32LE(12) !== OP_MSG || message[20] !== 0) throw new Error('unexpected reply from the server');
    const result = deserialize(message.subarray(21), { promoteValues: true, promoteLongs: false, fieldsAsRaw: raw });
    if (result.ok !== 1 && result.ok?.valueOf?.() !== 1) {
      const error = new Error(result.errmsg ?? 'command failed');
      error.code = result.code;
      throw error;
    }
    return result;
  }

  async authenticate(user, password, source) {
    const nonce = crypto.randomBytes(24).toString('base64');
    const bare = `n=${user.replaceAll('=', '=3D').replaceAll(',', '=2C')},r=${nonce}`;
    const start = await this.command(source, {
      saslStart: 1,
      mechanism: 'SCRAM-SHA-256',
      payload: Buffer.from(`n,,${bare}`),
      options: { skipEmptyExchange: true },
    });
    const serverFirst = Buffer.from(start.payload.buffer ?? start.payload).toString('utf8');
    const attrs = Object.fromEntries(serverFirst.split(',').map((p) => [p[0], p.slice(2)]));
    if (!attrs.r?.startsWith(nonce)) throw new Error('Authentication failed: the server nonce is wrong');
    const salted = crypto.pbkdf2Sync(password.normalize('NFKC'), Buffer.from(attrs.s, 'base64'), Number(attrs.i), 32, 'sha256');
    const clientKey = crypto.createHmac('sha256', salted).update('Client Key').digest();
    const storedKey = crypto.createHash('sha256').update(clientKey).digest();
    const withoutProof = `c=biws,r=${attrs.r}`;
    const authMessage = `${bare},${serverFirst},${withoutProof}`;
    const signature = crypto.createHmac('sha256', storedKey).update(authMessage).digest();
    const proof = Buffer.from(clientKey.map((b, i) => b ^ signature[i])).toString('base64');
    const next = await this.command(source, {
      saslContinue: 1,
      conversationId: start.conversationId,
      payload: Buffer.from(`${withoutProof},p=${proof}`),
    });
    const serverFinal = Buffer.from(next.payload.buffer ?? next.payload).toString('utf8');
    const serverKey = crypto.createHmac('sha256', salted).update('Server Key').digest();
    const expected = crypto.createHmac('sha256', serverKey).update(authMessage).digest('base64');
    if (serverFinal !== `v=${expected}`) throw new Error('Authentication failed: the server signature is wrong');
    if (!next.done) await this.command(source, { saslContinue: 1, conversationId: start.conversationId, payload: Buffer.alloc(0) });
  }

  close() {
    this.socket.end();
  }
}

// ---------------------------------------------------------------------------------------------------
// CRC-64/ECMA as Go's hash/crc64 (reflected, complemented), what mongodump writes in each EOF header.

const CRC_TABLE = (() => {
  const poly = 0xc96c5795d7870f42n;
  const table = new BigUint64Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = BigInt(i);
    for (let k = 0; k < 8; k++) crc = crc & 1n ? (crc >> 1n) ^ poly : crc >> 1n;
    table[i] = crc;
  }
  // Split in halves: per-byte BigInt arithmetic is slow.
  const hi = new Uint32Array(256);
  const lo = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    hi[i] = Number(table[i] >> 32n);
    lo[i] = Number(table[i] & 0xffffffffn);
  }
  return { hi, lo };
})();

export class Crc64 {
  hi = 0xffffffff;
  lo = 0xffffffff;

  update(bytes) {
    let { hi, lo } = this;
    for (let i = 0; i < bytes.length; i++) {
      const index = (lo ^ bytes[i]) & 0xff;
      lo = ((lo >>> 8) | ((hi & 0xff) << 24)) ^ CRC_TABLE.lo[index];
      hi = (hi >>> 8) ^ CRC_TABLE.hi[index];
    }
    this.hi = hi >>> 0;
    this.lo = lo >>> 0;
  }

  /** The checksum as a BSON int64 (the bits of the unsigned value). */
  value() {
    return Long.fromBits(~this.lo >>> 0, ~this.hi >>> 0, false);
  }
}

// ---------------------------------------------------------------------------------------------------
// Archive writing and reading.

const terminator = () => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(TERMINATOR);
  return b;
};

async function write(out, bytes) {
  if (!out.write(bytes))
    await new Promise((resolve, reject) => {
      out.once('drain', resolve);
      out.once('error', reject);
    });
}

async function dump(options, out, log) {
  const client = await connect(options);
  try {
    const build = await client.command('admin', { buildInfo: 1 });
    const databases = (await client.command('admin', { listDatabases: 1, nameOnly: true })).databases
      .map((d) => d.name)
      .filter((name) => !SKIPPED_DATABASES.has(name))
      .sort();
    const namespaces = [];
    for (const db of databases) {
      const listed = await client.command(db, { listCollections: 1, filter: { type: 'collection' }, cursor: { batchSize: 100_000 } });
      for (const c of listed.cursor.firstBatch.filter((c) => !c.name.startsWith('system.')).sort((a, b) => (a.name < b.name ? -1 : 1))) {
        const indexes = (await client.command(db, { listIndexes: c.name, cursor: {} })).cursor.firstBatch;
        const count = (await client.command(db, { count: c.name })).n;
        namespaces.push({ db, collection: c.name, indexes, options: c.options ?? {}, count: Number(count) });
      }
    }
    const magic = Buffer.alloc(4);
    magic.writeUInt32LE(MAGIC);
    await write(out, magic);
    await write(out, serialize({ concurrent_collections: 1, version: '0.1', server_version: build.version, tool_version: TOOL_VERSION }));
    for (const ns of namespaces) {
      const metadata = EJSON.stringify(
        { indexes: ns.indexes, uuid: '', collectionName: ns.collection, type: 'collection', options: ns.options },
        { relaxed: false },
      );
      await write(out, serialize({ db: ns.db, collection: ns.collection, metadata, size: 0, type: 'collection' }));
    }
    await write(out, terminator());
    for (const ns of namespaces) {
      log(`writing ${ns.db}.${ns.collection} to archive ${options.archive === '-' ? 'on stdout' : `'${options.archive}'`}`);
      const crc = new Crc64();
      let n = 0;
      let reply = await client.command(ns.db, { find: ns.collection, batchSize: 1000 }, { raw: { firstBatch: true } });
      for (;;) {
        const batch = reply.cursor.firstBatch ?? reply.cursor.nextBatch;
        if (batch.length > 0) {
          await write(out, serialize({ db: ns.db, collection: ns.collection, EOF: false, CRC: Long.fromNumber(0) }));
          for (const doc of batch) {
            crc.update(doc);
            await write(out, doc);
          }
          await write(out, terminator());
          n += batch.length;
        }
        const id = reply.cursor.id;
        if (!id || (typeof id === 'object' ? id.isZero() : id === 0)) break;
        reply = await client.command(ns.db, { getMore: id, collection: ns.collection, batchSize: 1000 }, { raw: { nextBatch: true } });
      }
      await write(out, serialize({ db: ns.db, collection: ns.collection, EOF: true, CRC: crc.value() }));
      await write(out, terminator());
      log(`done dumping ${ns.db}.${ns.collection} (${n} ${n === 1 ? 'document' : 'documents'})`);
    }
  } finally {
    client.close();
  }
}

/** Reads exact byte counts from a stream, with backpressure (nothing is read ahead beyond a chunk). */
class Reader {
  constructor(stream) {
    this.iterator = stream[Symbol.asyncIterator]();
    this.buffer = Buffer.alloc(0);
    this.offset = 0;
  }

  async fill(n) {
    while (this.buffer.length - this.offset < n) {
      const { value, done } = await this.iterator.next();
      if (done) return false;
      this.buffer = Buffer.concat([this.buffer.subarray(this.offset), value]);
      this.offset = 0;
    }
    return true;
  }

  async bytes(n, what) {
    if (!(await this.fill(n))) throw new Error(`corruption found in archive; the archive ends inside ${what}`);
    const out = this.buffer.subarray(this.offset, this.offset + n);
    this.offset += n;
    return out;
  }

  async uint32(what) {
    return (await this.bytes(4, what)).readUInt32LE(0);
  }

  /** A BSON document's bytes, or null for a terminator. */
  async document(what) {
    const head = await this.bytes(4, what);
    const size = head.readUInt32LE(0);
    if (size === TERMINATOR) return null;
    if (size < 5 || size > 48 * 1024 * 1024) throw new Error(`corruption found in archive; ${what} has an invalid size ${size}`);
    return Buffer.concat([head, await this.bytes(size - 4, what)]);
  }

  async atEnd() {
    return !(await this.fill(1));
  }
}

async function restore(options, input, log) {
  const reader = new Reader(input);
  if ((await reader.uint32('the magic number')) !== MAGIC) throw new Error('stream or file does not appear to be a mongodump archive');
  const header = deserialize(await reader.document('the archive header'));
  if (header.version !== '0.1') throw new Error(`unsupported archive format version ${header.version}`);
  const namespaces = new Map();
  for (;;) {
    const doc = await reader.document('the prelude');
    if (!doc) break;
    const meta = deserialize(doc);
    namespaces.set(`${meta.db}.${meta.collection}`, { db: meta.db, collection: meta.collection, crc: new Crc64(), n: 0, done: false });
  }
  log(`preparing collections to restore from`);
  const client = await connect(options);
  let restored = 0;
  try {
    for (const ns of namespaces.values()) {
      if (options.drop) {
        log(`dropping collection ${ns.db}.${ns.collection} before restoring`);
        await client.command(ns.db, { drop: ns.collection });
      }
      await client.command(ns.db, { create: ns.collection }).catch((error) => {
        if (error.code !== 48) throw error; // NamespaceExists: restored into, as mongorestore does without --drop
      });
      log(`restoring ${ns.db}.${ns.collection} from archive ${options.archive === '-' ? 'on stdin' : `'${options.archive}'`}`);
    }
    while (!(await reader.atEnd())) {
      const head = deserialize(await reader.document('a namespace header'));
      const ns = namespaces.get(`${head.db}.${head.collection}`);
      if (!ns) throw new Error(`corruption found in archive; namespace ${head.db}.${head.collection} is not in the prelude`);
      if (head.EOF) {
        if ((await reader.uint32('a terminator')) !== TERMINATOR)
          throw new Error('corruption found in archive; no terminator after an EOF header');
        if (!ns.crc.value().equals(head.CRC))
          throw new Error(`corruption found in archive; ${head.db}.${head.collection} fails its CRC check`);
        ns.done = true;
        log(`finished restoring ${ns.db}.${ns.collection} (${ns.n} ${ns.n === 1 ? 'document' : 'documents'}, 0 failures)`);
        continue;
      }
      let batch = [];
      let bytes = 0;
      const flush = async () => {
        if (batch.length === 0) return;
        const reply = await client.command(ns.db, { insert: ns.collection, ordered: true }, { sequences: [['documents', batch]] });
        if (reply.writeErrors?.length) throw new Error(`${ns.db}.${ns.collection}: ${reply.writeErrors[0].errmsg}`);
        ns.n += batch.length;
        restored += batch.length;
        batch = [];
        bytes = 0;
      };
      for (;;) {
        const doc = await reader.document(`${ns.db}.${ns.collection}'s documents`);
        if (!doc) break;
        ns.crc.update(doc);
        batch.push(doc);
        bytes += doc.length;
        if (bytes >= INSERT_BATCH_BYTES || batch.length >= INSERT_BATCH_DOCS) await flush();
      }
      await flush();
    }
    const unfinished = [...namespaces.values()].filter((ns) => !ns.done);
    if (unfinished.length > 0)
      throw new Error(`corruption found in archive; it ends before ${unfinished[0].db}.${unfinished[0].collection} is complete`);
    log(`${restored} document(s) restored successfully. 0 document(s) failed to restore.`);
  } finally {
    client.close();
  }
}

async function connect(options) {
  const host = options.host ?? 'localhost';
  const port = Number(options.port ?? 27017);
  const client = await Client.connect(host === 'localhost' ? '127.0.0.1' : host, port);
  const password = options.password ?? (options.config ? readConfig(options.config).password : undefined);
  if (options.username) {
    if (password === undefined) throw new UsageError('a password is needed with --username (in the --config file)');
    await client.authenticate(options.username, password, options.authenticationDatabase ?? 'admin');
  }
  return client;
}

export async function main(tool, argv) {
  let options;
  try {
    options = parseArgs(tool, argv);
    const log = (text) => {
      if (!options.quiet) process.stderr.write(logLine(text));
    };
    if (tool === 'dump') {
      const out = options.archive === '-' ? process.stdout : fs.createWriteStream(options.archive);
      await dump(options, out, log);
      if (out !== process.stdout) await new Promise((resolve, reject) => out.end((e) => (e ? reject(e) : resolve())));
    } else {
      await restore(options, options.archive === '-' ? process.stdin : fs.createReadStream(options.archive), log);
    }
    return 0;
  } catch (error) {
    process.stderr.write(logLine(`Failed: ${error.message}`));
    return error instanceof UsageError ? 3 : 1;
  }
}

if (process.argv[1] && fs.realpathSync(process.argv[1]) === fs.realpathSync(new URL(import.meta.url).pathname)) {
  const [tool, ...rest] = process.argv.slice(2);
  if (tool !== 'dump' && tool !== 'restore') {
    process.stderr.write('usage: tools.mjs dump|restore --archive [options]\n');
    process.exitCode = 3;
  } else {
    main(tool, rest).then((code) => {
      process.exitCode = code;
    });
  }
}
