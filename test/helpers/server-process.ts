import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { IptablesTrafficGate } from '../../adapters/net/iptables.traffic-gate.js';
import { ownPortRange } from './docker.js';
import { readResponse, type ApiResponse } from './http.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * The arguments of `npm start` (its `node ...` command, read from package.json), built first if
 * needed: the tests run what users run, without npm in between, so signals reach the server itself.
 */
export function startArgs(): string[] {
  const start = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start!;
  // `npm start` goes through scripts/ensure-node.sh, which picks a supported Node; the tests already run on one (process.execPath).
  const [command, ...args] = start.replace(/^bash scripts\/ensure-node\.sh\s+/, '').split(/\s+/);
  if (command !== 'node') throw new Error(`npm start is expected to run node, not ${command}`);
  const entry = path.join(ROOT, args.at(-1)!);
  if (!existsSync(entry) || process.env.SLIPWAY_TEST_BUILT !== '1') buildOnce();
  return args;
}

let built = false;
function buildOnce(): void {
  if (built) return;
  execFileSync('npm', ['run', '-s', 'build'], { cwd: ROOT, stdio: 'inherit' });
  built = true;
}

export interface ServerProcess {
  url: string;
  /** The BOOTSTRAP_API_KEY it was started with: an all-project write key. */
  token: string;
  dataDir: string;
  child: ChildProcess;
  output(): string;
  /** SIGTERM, then wait for the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL: no cleanup at all, as a crash. */
  kill(): Promise<void>;
  /** Removes the data directory too. */
  dispose(): Promise<void>;
}

/**
 * Starts the server exactly as `npm start` does (see startArgs) on a free port
 * with its own DATA_DIR, and waits until it says it is listening.
 */
export async function startServerProcess(
  env: Record<string, string> = {},
  reuse?: { dataDir: string; token: string },
  /** `argvPrefix`: what the platform runs under (nsenter into a test node's network namespace: the manager's host). */
  options: { argvPrefix?: string[] } = {},
): Promise<ServerProcess> {
  const dataDir = reuse?.dataDir ?? mkdtempSync(path.join(tmpdir(), 'slipway-e2e-'));
  const token = reuse?.token ?? `boot_${randomBytes(16).toString('hex')}`;
  const prefix = options.argvPrefix ?? [];
  // nsenter enters the namespace and execs node in its own process: signals reach the platform itself.
  const child = spawn(prefix[0] ?? process.execPath, [...prefix.slice(1), ...(prefix.length ? [process.execPath] : []), ...startArgs()], {
    cwd: ROOT,
    // The runner is paused unless a test asks for it: API tests keep deployments queued.
    // No proxy unless a test brings one: a default install would start a Caddy container on ports 80 and 443.
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: '0',
      DATA_DIR: dataDir,
      BOOTSTRAP_API_KEY: token,
      BUILD_CONCURRENCY: '0',
      PROXY: 'none',
      // Host ports of its own unless the test names them: the default 20000-29999 is every other platform's on this host.
      HOST_PORT_RANGE: ownPortRange(),
      // No scheduled restore drills unless a test asks: a file's backup schedules would start scratch
      // databases beside the file CI runs next to it (drills asked for over the API still run).
      SCHEDULED_DRILLS: 'false',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in 30 s:\n${output}`)), 30_000);
    const onData = () => {
      const match = /"msg":"slipway listening","url":"([^"]+)"/.exec(output);
      if (match) {
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${output}`));
    });
  });

  return {
    url,
    token,
    dataDir,
    child,
    output: () => output,
    async stop() {
      if (child.exitCode === null && !child.killed) child.kill('SIGTERM');
      return exited;
    },
    async kill() {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    },
    async dispose() {
      if (child.exitCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
      if (!reuse) {
        rmSync(dataDir, { recursive: true, force: true });
        await removeInstanceLeftovers(output);
      }
    },
  };
}

/**
 * What an install keeps beyond its data directory: its containers with their anonymous volumes, its
 * services' named volumes, the traffic slot network and the gate's packet filter chains (see
 * TrafficSlots). A test install that is gone for good leaves none of them.
 */
export async function removeInstanceLeftovers(output: string): Promise<void> {
  const instance = /"instanceId":"([a-z0-9]+)"/.exec(output)?.[1];
  if (!instance) return;
  const docker = (...args: string[]) => {
    try {
      return execFileSync('docker', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
        .split('\n')
        .filter(Boolean);
    } catch {
      return [];
    }
  };
  // The install is gone with its data directory: its containers (a test may leave some), its gate
  // responder, then its networks (the slot network and any project network), which nothing uses now.
  const containers = [
    ...docker('ps', '-aq', '--filter', `label=slipway.instance=${instance}`),
    ...docker('ps', '-aq', '--filter', `name=-gate-${instance}$`),
  ];
  if (containers.length > 0) docker('rm', '-f', '-v', ...containers);
  // Named volumes the install's services mounted (labelled with the install by the engine adapter):
  // a test that stops its server without deleting its services would leave them on the engine.
  const volumes = docker('volume', 'ls', '-q', '--filter', `label=slipway.instance=${instance}`);
  if (volumes.length > 0) docker('volume', 'rm', '-f', ...volumes);
  const networks = docker('network', 'ls', '-q', '--filter', `label=slipway.instance=${instance}`);
  if (networks.length > 0) docker('network', 'rm', ...networks);
  await new IptablesTrafficGate({ instanceId: instance, gatePort: 1 }).remove().catch(() => {});
}

/** fetch with the key and JSON handling most tests want. */
export function api(base: string, token: string | undefined) {
  return async (method: string, pathname: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse> => {
    const res = await fetch(`${base}${pathname}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
    return readResponse(res);
  };
}
