import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { get, request } from 'node:http';

/** A free TCP port on `host` (closed again before it is returned). */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A port for something that binds it only later (Caddy's routes bind at the first load, seconds
 * after the port is chosen): outside the kernel's ephemeral range, where freePort() and every
 * `PORT=0` server pick theirs, outside HOST_PORT_RANGE's default (20000-29999), and outside the
 * test installs' own host port windows (ownPortRange: 14000-19999). A port from freePort() was once
 * taken meanwhile by another test process's Caddy admin API.
 */
export async function quietPort(): Promise<number> {
  const canListen = (port: number, host: string) =>
    new Promise<boolean>((resolve) => {
      const probe = createServer();
      probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code !== 'EADDRINUSE' && error.code !== 'EACCES'));
      probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(true)));
    });
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 10_000 + Math.floor(Math.random() * 4_000);
    if ((await canListen(port, '0.0.0.0')) && (await canListen(port, '127.0.0.1')) && (await canListen(port, '::'))) return port;
  }
  throw new Error('no unused port in 10000-13999');
}

export interface CaddyProcess {
  /** `http://127.0.0.1:<adminPort>`: what CADDY_ADMIN_URL is set to. */
  adminUrl: string;
  adminPort: number;
  /** The port routes are served on (PROXY_HTTP_PORT, with PROXY_AUTO_HTTPS=false). */
  httpPort: number;
  /** The environment a platform needs to keep this Caddy configured. */
  platformEnv: Record<string, string>;
  /** SIGKILL: the routes are gone with it. */
  kill(): Promise<void>;
  /** Starts it again, empty, on the same ports (as a supervisor would). */
  restart(): Promise<void>;
  stop(): Promise<void>;
  output(): string;
  /** The running Caddy's process id (benches read its CPU time), undefined while it is not running. */
  pid(): number | undefined;
}

/**
 * Starts Debian's caddy (provisioned by test/provision/caddy.sh) with only its admin API on
 * 127.0.0.1, on free ports, with its state in a temporary directory: one per test file.
 */
export async function startCaddy(): Promise<CaddyProcess> {
  const adminPort = await freePort();
  const httpPort = await quietPort();
  // The traffic gate's responder binds at the first load too.
  let gatePort = await quietPort();
  while (gatePort === httpPort) gatePort = await quietPort();
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-caddy-'));
  const config = path.join(dir, 'bootstrap.json');
  writeFileSync(config, JSON.stringify({ admin: { listen: `127.0.0.1:${adminPort}` } }));
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  let child: ChildProcess | null = null;
  let output = '';

  const launch = async () => {
    const started = spawn('caddy', ['run', '--config', config], {
      env: { ...process.env, XDG_CONFIG_HOME: path.join(dir, 'config'), XDG_DATA_HOME: path.join(dir, 'data'), HOME: dir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    started.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    started.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    started.once('error', (error) => (output += `\nspawn error: ${error.message}`));
    child = started;
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if (started.exitCode !== null) throw new Error(`caddy exited with ${started.exitCode}:\n${output}`);
      const up = await fetch(`${adminUrl}/config/`, { signal: AbortSignal.timeout(500) }).then(
        (r) => r.ok,
        () => false,
      );
      if (up) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`caddy did not answer on ${adminUrl} within 10 s:\n${output}`);
  };
  const halt = async (signal: NodeJS.Signals) => {
    const current = child;
    child = null;
    if (!current || current.exitCode !== null) return;
    const exited = new Promise((resolve) => current.once('exit', resolve));
    current.kill(signal);
    await exited;
  };

  await launch();
  return {
    adminUrl,
    adminPort,
    httpPort,
    platformEnv: {
      CADDY_ADMIN_URL: adminUrl,
      PROXY_HTTP_PORT: String(httpPort),
      PROXY_AUTO_HTTPS: 'false',
      PROXY: 'caddy',
      PROXY_GATE_PORT: String(gatePort),
      PROXY_HEALTH_INTERVAL_MS: '250',
    },
    kill: () => halt('SIGKILL'),
    restart: async () => {
      await halt('SIGKILL');
      await launch();
    },
    stop: async () => {
      await halt('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
    output: () => output,
    pid: () => (child as ChildProcess | null)?.pid,
  };
}

export interface ViaResponse {
  status: number;
  text: string;
}

/**
 * One request through the proxy as a browser for `hostname` would send it (the Host header set),
 * on a fresh connection; null when the connection failed.
 */
export function requestVia(port: number, hostname: string, pathname = '/', timeoutMs = 5_000): Promise<ViaResponse | null> {
  return new Promise((resolve) => {
    const req = request(
      { host: '127.0.0.1', port, path: pathname, method: 'GET', headers: { Host: hostname }, agent: false, timeout: timeoutMs },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', () => resolve(null));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(null));
    req.end();
  });
}

/** Polls until `hostname` answers through the proxy with `expected` (status and, if given, a body match). */
export async function waitUntilServed(
  port: number,
  hostname: string,
  expected: { status: number; text?: RegExp },
  timeoutMs = 10_000,
): Promise<{ afterMs: number; response: ViaResponse }> {
  const started = Date.now();
  let last: ViaResponse | null = null;
  while (Date.now() - started < timeoutMs) {
    last = await requestVia(port, hostname, '/', 2_000);
    if (last && last.status === expected.status && (!expected.text || expected.text.test(last.text))) {
      return { afterMs: Date.now() - started, response: last };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(
    `${hostname} was not served with ${expected.status} ${expected.text ?? ''} within ${timeoutMs} ms; last: ${JSON.stringify(last)}`,
  );
}

/**
 * GET on Caddy's admin API on its own connection: Caddy restarts its admin endpoint at every load
 * (and after a rejected one), so a pooled keep-alive socket may be closed under the next request.
 */
export function adminGet(adminUrl: string, path: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    get(`${adminUrl}${path}`, { agent: false, timeout: 5_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null }));
    }).on('error', reject);
  });
}
