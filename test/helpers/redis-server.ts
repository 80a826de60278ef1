import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { ENGINE_SPECS } from '../../src/domain/database-engines.js';

const run = promisify(execFile);

export interface TestRedis {
  host: string;
  port: number;
  password: string;
  /** `redis:7 container <name>` or `host redis-server <version>`. */
  via: string;
  /** Stops the server and keeps nothing else running (its port then refuses connections). */
  stop(): Promise<void>;
  /** Stops it if running and removes what it left (container, data folder). */
  remove(): Promise<void>;
}

/**
 * A real Redis with a password, as the platform runs one: the `redis:7` image with the engine's own command
 * when the image is in the Docker engine (a container `redisadmin-<random>`, published on 127.0.0.1), else
 * the host's `redis-server` binary as a child of the test on a free port. Never skips: with neither, it throws.
 */
export async function startTestRedis(): Promise<TestRedis> {
  const password = `pw-${randomBytes(12).toString('hex')}`;
  const server = (await imagePresent('redis:7')) ? await startContainer(password) : await startHostServer(password);
  try {
    await waitForPing(server);
  } catch (error) {
    await server.remove();
    throw error;
  }
  return server;
}

async function imagePresent(image: string): Promise<boolean> {
  try {
    await run('docker', ['image', 'inspect', '--format', '{{.Id}}', image], { timeout: 20_000 });
    return true;
  } catch {
    return false;
  }
}

async function startContainer(password: string): Promise<TestRedis> {
  const name = `redisadmin-${randomBytes(4).toString('hex')}`;
  const command = ENGINE_SPECS.redis.command?.({ logicalReplication: false });
  if (!command) throw new Error('ENGINE_SPECS.redis has no container command');
  await run('docker', ['run', '-d', '--name', name, '-e', `REDIS_PASSWORD=${password}`, '-p', '127.0.0.1::6379', 'redis:7', ...command], {
    timeout: 60_000,
  });
  const remove = async () => {
    await run('docker', ['rm', '-f', name], { timeout: 60_000 }).catch(() => undefined);
  };
  try {
    const { stdout } = await run('docker', ['port', name, '6379/tcp']);
    const match = /127\.0\.0\.1:(\d+)/.exec(stdout);
    if (!match) throw new Error(`docker port ${name} gave no 127.0.0.1 port: ${stdout}`);
    return {
      host: '127.0.0.1',
      port: Number(match[1]),
      password,
      via: `redis:7 container ${name}`,
      stop: async () => {
        await run('docker', ['stop', '-t', '2', name], { timeout: 60_000 });
      },
      remove,
    };
  } catch (error) {
    await remove();
    throw error;
  }
}

async function startHostServer(password: string): Promise<TestRedis> {
  let version: string;
  try {
    version = (await run('redis-server', ['--version'])).stdout.trim();
  } catch {
    throw new Error(
      'The Redis tests need a real server: neither the redis:7 image (test/provision/images.sh builds the stand-in) nor a redis-server binary (apt-get install redis-server) is available.',
    );
  }
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'redisadmin-'));
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--requirepass', password, '--appendonly', 'yes', '--save', '', '--dir', dir],
    {
      stdio: 'ignore',
    },
  );
  let exited = false;
  const exit = new Promise<void>((resolve) => child.once('exit', () => ((exited = true), resolve())));
  const stop = async () => {
    if (!exited) child.kill('SIGTERM');
    await exit;
  };
  return {
    host: '127.0.0.1',
    port,
    password,
    via: `host ${/v=(\S+)/.exec(version)?.[0] ?? 'redis-server'} (pid ${child.pid})`,
    stop,
    remove: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

async function waitForPing(server: TestRedis): Promise<void> {
  const deadline = Date.now() + 30_000;
  let last: unknown = null;
  while (Date.now() < deadline) {
    const client = testClient(server, 0);
    try {
      await client.connect();
      if ((await client.ping()) === 'PONG') return;
    } catch (error) {
      last = error;
    } finally {
      client.disconnect();
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`Redis (${server.via}) did not answer PING within 30 s: ${String(last)}`);
}

/** A plain client of the test's own, to seed data and look at the server from outside the adapter. */
export function testClient(server: Pick<TestRedis, 'host' | 'port' | 'password'>, db: number): Redis {
  const client = new Redis({
    host: server.host,
    port: server.port,
    password: server.password,
    db,
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
  });
  client.on('error', () => undefined);
  return client;
}
