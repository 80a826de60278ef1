import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { docker, ownPortRange, provisionDocker } from '../helpers/docker.js';
import { deploy } from '../helpers/deployments.js';

/**
 * Container terminals over a real WebSocket (the `ws` client) into real containers: a busybox
 * service, and one built FROM scratch whose only file is a static binary (no shell at all).
 */
const run = promisify(execFile);
const NO_SHELL_IMAGE = 'slipway-terminals-test/noshell:1';
const IDLE_MS = 6000;
let server: ServerProcess;
let call: ReturnType<typeof api>;
let web: { id: string; projectId: string };
let webContainer: string;
let noShell: { id: string };
let readKey: string;
let otherProjectKey: string;
const strangers: string[] = [];

interface Terminal {
  ws: WebSocket;
  /** Everything the terminal printed so far. */
  output(): Buffer;
  controls: Array<Record<string, any>>;
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  send(text: string): void;
  closed: Promise<{ code: number; reason: string }>;
}

function wsUrl(pathname: string): string {
  return `${server.url.replace(/^http/, 'ws')}${pathname}`;
}

/** Opens a terminal; rejects with the HTTP status when the upgrade is refused. */
function open(pathname: string, options: { token?: string | null; headers?: Record<string, string> } = {}): Promise<Terminal> {
  const token = options.token === undefined ? server.token : options.token;
  const ws = new WebSocket(wsUrl(pathname), { headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...options.headers } });
  const chunks: Buffer[] = [];
  const controls: Array<Record<string, any>> = [];
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  ws.on('message', (data, isBinary) => {
    if (isBinary) chunks.push(data as Buffer);
    else controls.push(JSON.parse(data.toString()));
  });
  const terminal: Terminal = {
    ws,
    output: () => Buffer.concat(chunks),
    controls,
    closed,
    send: (text) => ws.send(Buffer.from(text), { binary: true }),
    async waitFor(pattern, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(terminal.output().toString('latin1'))) {
        if (Date.now() > deadline)
          throw new Error(`no ${pattern} in terminal output: ${JSON.stringify(terminal.output().toString('latin1'))}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
  };
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(terminal));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () =>
        reject(Object.assign(new Error(`upgrade refused: ${res.statusCode} ${body}`), { status: res.statusCode, body: JSON.parse(body) })),
      );
    });
    ws.once('error', reject);
  });
}

async function refused(pathname: string, options: Parameters<typeof open>[1] = {}): Promise<{ status: number; body: any }> {
  try {
    const terminal = await open(pathname, options);
    terminal.ws.terminate();
  } catch (error) {
    const { status, body } = error as { status?: number; body?: any };
    if (status) return { status, body };
    throw error;
  }
  throw new Error(`${pathname} was opened`);
}

async function exitOf(terminal: Terminal): Promise<{ exit: Record<string, any> | undefined; code: number }> {
  const { code } = await terminal.closed;
  return { exit: terminal.controls.find((c) => c.type === 'exit'), code };
}

async function processes(container: string): Promise<string> {
  return docker('top', container, '-o', 'pid,args').catch(() => docker('top', container));
}

beforeAll(async () => {
  await provisionDocker({ images: 'busybox' });
  // A static busybox as the image's only file: the container runs, and has no /bin/sh.
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-terminals-'));
  try {
    const created = await docker('create', 'busybox:latest');
    await docker('cp', '-L', `${created}:/bin/busybox`, path.join(dir, 'busybox'));
    await docker('rm', created);
    writeFileSync(
      path.join(dir, 'Dockerfile'),
      'FROM scratch\nCOPY busybox /busybox\nENTRYPOINT ["/busybox", "httpd", "-f", "-p", "3000", "-h", "/"]\n',
    );
    await run('docker', ['build', '-q', '-t', NO_SHELL_IMAGE, dir]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  server = await startServerProcess({
    BUILD_CONCURRENCY: '2',
    STOP_GRACE_SECONDS: '1',
    HOST_PORT_RANGE: ownPortRange(),
    TERMINAL_IDLE_TIMEOUT_MS: String(IDLE_MS),
    TERMINAL_MAX_PER_KEY: '3',
    AUTH_FAILURES_PER_MINUTE: '1000',
  });
  call = api(server.url, server.token);
  const project = (await call('POST', '/api/projects', { name: 'terminals' })).json.project;
  const other = (await call('POST', '/api/projects', { name: 'terminals other' })).json.project;
  const create = async (body: Record<string, unknown>) => {
    const res = await call('POST', `/api/projects/${project.id}/services`, body);
    expect(res.status, res.text).toBe(201);
    return res.json.service;
  };
  web = await create({
    name: 'web',
    repoUrl: 'container-image',
    containerImage: 'busybox:latest',
    internalPort: 3000,
    startCommand: 'mkdir -p /www && echo up > /www/index.html && exec httpd -f -p 3000 -h /www',
  });
  noShell = await create({ name: 'noshell', repoUrl: 'container-image', containerImage: NO_SHELL_IMAGE, internalPort: 3000 });
  const [deployedWeb, deployedNoShell] = await Promise.all([deploy(call, web.id, 90_000), deploy(call, noShell.id, 90_000)]);
  expect(deployedWeb.deployment.status, deployedWeb.logs.join('\n')).toBe('succeeded');
  expect(deployedNoShell.deployment.status, deployedNoShell.logs.join('\n')).toBe('succeeded');
  webContainer = deployedWeb.deployment.containerName!;
  readKey = (await call('POST', '/api/api-keys', { name: 'terminal-read', access: 'read' })).json.token;
  otherProjectKey = (await call('POST', '/api/api-keys', { name: 'terminal-other', access: 'write', projectIds: [other.id] })).json.token;
}, 300_000);

afterAll(async () => {
  for (const name of strangers) await docker('rm', '-f', name).catch(() => {});
  await server?.dispose();
}, 60_000);

describe('service terminal', () => {
  it('runs echo, resizes, and sends the exit code before closing', async () => {
    const terminal = await open(`/api/ws/services/${web.id}/terminal?cols=90&rows=20`);
    terminal.send('echo hello-$((6*7))\n');
    await terminal.waitFor(/hello-42/);
    terminal.send('stty size\n');
    await terminal.waitFor(/20 90/);
    terminal.ws.send(JSON.stringify({ type: 'resize', cols: 132, rows: 43 }));
    await new Promise((r) => setTimeout(r, 200));
    terminal.ws.send(JSON.stringify({ type: 'input', data: 'stty size\n' }));
    await terminal.waitFor(/43 132/);
    terminal.send('exit 3\n');
    const { exit, code } = await exitOf(terminal);
    expect(exit).toEqual({ type: 'exit', code: 3 });
    expect(code).toBe(1000);
  });

  it('is binary-safe: bytes that are not UTF-8 arrive as sent', async () => {
    const terminal = await open(`/api/ws/services/${web.id}/terminal`);
    terminal.send("printf 'X\\377\\376\\200Y'; echo\n");
    await terminal.waitFor(/X\xff\xfe\x80Y/);
    terminal.send('exit\n');
    expect((await exitOf(terminal)).exit).toEqual({ type: 'exit', code: 0 });
  });

  it('answers a malformed control message with an error and keeps the terminal open', async () => {
    const terminal = await open(`/api/ws/services/${web.id}/terminal`);
    terminal.ws.send(JSON.stringify({ type: 'resize', cols: 0, rows: 10 }));
    terminal.ws.send('not json');
    terminal.send('echo still-$((1+1))\n');
    await terminal.waitFor(/still-2/);
    expect(terminal.controls.filter((c) => c.type === 'error').map((c) => c.error)).toEqual(['validation_error', 'validation_error']);
    terminal.send('exit\n');
    await terminal.closed;
  });
});

describe('container terminal', () => {
  it('opens in a container of the install by name and by id', async () => {
    const id = await docker('inspect', '--format', '{{.Id}}', webContainer);
    for (const ref of [webContainer, id]) {
      const terminal = await open(`/api/ws/terminal/${ref}`);
      terminal.send('echo by-$((2+3))\n');
      await terminal.waitFor(/by-5/);
      terminal.send('exit\n');
      expect((await exitOf(terminal)).exit?.code).toBe(0);
    }
  });

  it("a container that is not this install's is a 404, even when it runs", async () => {
    const name = `slipway-terminals-test-stranger-${process.pid}`;
    strangers.push(name);
    await docker('run', '-d', '--name', name, 'busybox:latest', 'sleep', '300');
    const { status, body } = await refused(`/api/ws/terminal/${name}`);
    expect(status).toBe(404);
    expect(body).toMatchObject({ error: 'not_found' });
  });

  it('a container without a shell is refused (409) unless the request names a command its image has', async () => {
    const { status, body } = await refused(`/api/ws/services/${noShell.id}/terminal`);
    expect(status).toBe(409);
    expect(body).toMatchObject({ error: 'not_running', details: { field: 'command' } });
    expect(body.message).toMatch(/no \/bin\/sh/);
    const missing = await refused(`/api/ws/services/${noShell.id}/terminal?command=bash`);
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ error: 'validation_error', details: { field: 'command' } });
    // The image's one binary runs (without arguments, busybox lists its applets and exits 0).
    const terminal = await open(`/api/ws/services/${noShell.id}/terminal?command=/busybox`);
    const { exit, code } = await exitOf(terminal);
    expect(code).toBe(1000);
    expect(exit).toEqual({ type: 'exit', code: 0 });
    expect(terminal.output().toString()).toMatch(/BusyBox v/);
  });
});

describe('processes and limits', () => {
  it('a closed socket leaves no exec process behind', async () => {
    const terminal = await open(`/api/ws/services/${web.id}/terminal`);
    terminal.send('sleep 4242\n');
    const deadline = Date.now() + 10_000;
    while (!(await processes(webContainer)).includes('sleep 4242')) {
      if (Date.now() > deadline) throw new Error('sleep never started');
      await new Promise((r) => setTimeout(r, 100));
    }
    terminal.ws.terminate();
    const gone = Date.now() + 10_000;
    let top = await processes(webContainer);
    while (top.includes('sleep 4242') || /\/bin\/sh\s*$/m.test(top)) {
      if (Date.now() > gone) throw new Error(`exec processes left behind:\n${top}`);
      await new Promise((r) => setTimeout(r, 100));
      top = await processes(webContainer);
    }
  });

  it('closes an idle terminal (and kills its process), telling the client why', async () => {
    const terminal = await open(`/api/ws/services/${web.id}/terminal`);
    const started = Date.now();
    const { exit, code } = await exitOf(terminal);
    expect(Date.now() - started).toBeGreaterThanOrEqual(IDLE_MS - 200);
    expect(exit).toMatchObject({ type: 'exit', reason: 'idle_timeout' });
    expect(code).toBe(1000);
  }, 20_000);

  it('caps open terminals per key (429) and frees the place when one closes', async () => {
    const open3 = await Promise.all([1, 2, 3].map(() => open(`/api/ws/services/${web.id}/terminal`)));
    const { status, body } = await refused(`/api/ws/services/${web.id}/terminal`);
    expect(status).toBe(429);
    expect(body).toMatchObject({ error: 'rate_limited' });
    open3[0]!.send('exit\n');
    await open3[0]!.closed;
    const again = await open(`/api/ws/services/${web.id}/terminal`);
    for (const terminal of [again, open3[1]!, open3[2]!]) {
      terminal.send('exit\n');
      await terminal.closed;
    }
  });

  it("a client that stops reading does not grow the server's memory", async () => {
    const rss = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.child.pid}/status`, 'utf8'))![1]) * 1024;
    const terminal = await open(`/api/ws/services/${web.id}/terminal`);
    const before = rss();
    // `yes` writes as fast as the terminal takes it: hundreds of MB/s if nothing held it back.
    terminal.send('yes 0123456789012345678901234567890123456789012345678901234567890123456789\n');
    await terminal.waitFor(/0123456789/);
    (terminal.ws as unknown as { pause(): void }).pause();
    await new Promise((r) => setTimeout(r, 3000));
    // Without backpressure this grows by ~50 MB here; with it, by what the buffers in between hold.
    const grown = rss() - before;
    expect(grown).toBeLessThan(16 * 1024 * 1024);
    (terminal.ws as unknown as { resume(): void }).resume();
    terminal.send('\x03');
    terminal.send('exit 5\n');
    expect((await exitOf(terminal)).exit?.code).toBe(5);
  }, 30_000);
});

describe('authentication', () => {
  it("401 without a key or with an unknown one, 403 for a read key, 404 outside the key's projects or for an unknown service", async () => {
    const target = `/api/ws/services/${web.id}/terminal`;
    expect(await refused(target, { token: null })).toMatchObject({ status: 401, body: { error: 'unauthorized' } });
    expect(await refused(target, { token: 'slw_never-issued-000000000000000000' })).toMatchObject({ status: 401 });
    expect(await refused(target, { token: readKey })).toMatchObject({ status: 403, body: { error: 'forbidden' } });
    expect(await refused(target, { token: otherProjectKey })).toMatchObject({ status: 404, body: { error: 'not_found' } });
    expect(await refused(`/api/ws/terminal/${webContainer}`, { token: otherProjectKey })).toMatchObject({ status: 404 });
    expect(await refused('/api/ws/services/doesnotexist0000/terminal')).toMatchObject({ status: 404 });
    expect(await refused('/api/ws/elsewhere')).toMatchObject({ status: 404 });
    expect(await refused(`${target}?token=${server.token}`)).toMatchObject({ status: 400, body: { details: { field: 'token' } } });
  });

  it('a personal token opens a terminal with deploy:write (or admin) only: any other scope is 403 insufficient_scope', async () => {
    const anyone = api(server.url, undefined);
    const owner = { email: 'owner@terminals.test', password: 'terminal owner password', name: 'Owner' };
    expect((await anyone('POST', '/api/auth/signup', owner)).status).toBe(201);
    const session = (await anyone('POST', '/api/auth/signin', { email: owner.email, password: owner.password })).json.session.token;
    const token = async (scopes: string[]) => {
      const res = await api(server.url, session)('POST', '/api/user/tokens', { name: scopes.join('+'), scopes });
      expect(res.status, res.text).toBe(201);
      return res.json.token as string;
    };
    const target = `/api/ws/services/${web.id}/terminal`;
    expect(await refused(target, { token: await token(['logs:read', 'project:read']) })).toMatchObject({
      status: 403,
      body: { error: 'insufficient_scope', details: { scope: 'deploy:write' } },
    });
    for (const scopes of [['deploy:write'], ['admin']]) {
      const terminal = await open(target, { token: await token(scopes) });
      terminal.send(`echo scoped-${scopes[0]}\n`);
      await terminal.waitFor(new RegExp(`scoped-${scopes[0]}`));
      terminal.send('exit\n');
      expect((await exitOf(terminal)).exit).toMatchObject({ type: 'exit', code: 0 });
    }
  });

  it('a ticket opens one terminal once, for the path it names, without any header', async () => {
    const target = `/api/ws/services/${web.id}/terminal`;
    const res = await call('POST', '/api/ws/tickets', { target });
    expect(res.status, res.text).toBe(201);
    expect(res.json.ticket).toMatch(/^wst_/);
    expect(Date.parse(res.json.expiresAt) - Date.now()).toBeGreaterThan(20_000);
    expect(Date.parse(res.json.expiresAt) - Date.now()).toBeLessThanOrEqual(30_000);
    const terminal = await open(`${target}?ticket=${res.json.ticket}`, { token: null });
    terminal.send('echo ticket-ok\n');
    await terminal.waitFor(/ticket-ok/);
    terminal.send('exit\n');
    await terminal.closed;
    expect(await refused(`${target}?ticket=${res.json.ticket}`, { token: null })).toMatchObject({ status: 401 });
    const forWeb = (await call('POST', '/api/ws/tickets', { target })).json.ticket;
    expect(await refused(`/api/ws/terminal/${webContainer}?ticket=${forWeb}`, { token: null })).toMatchObject({ status: 401 });
    // The ticket endpoint checks the target as the socket would.
    expect((await api(server.url, readKey)('POST', '/api/ws/tickets', { target })).status).toBe(403);
    expect((await api(server.url, otherProjectKey)('POST', '/api/ws/tickets', { target })).status).toBe(404);
    const bad = await call('POST', '/api/ws/tickets', { target: '/api/services' });
    expect(bad.status).toBe(400);
    expect(bad.json.details.field).toBe('target');
    expect((await call('POST', '/api/ws/tickets', { target: `/api/ws/services/${noShell.id}/terminal` })).status).toBe(201);
  });

  it("a browser page of another origin cannot open a terminal; the platform's own can", async () => {
    const target = `/api/ws/services/${web.id}/terminal`;
    expect(await refused(target, { headers: { origin: 'https://evil.example' } })).toMatchObject({ status: 403 });
    const ticket = (await call('POST', '/api/ws/tickets', { target })).json.ticket;
    const terminal = await open(`${target}?ticket=${ticket}`, { token: null, headers: { origin: new URL(server.url).origin } });
    terminal.send('exit\n');
    await terminal.closed;
  });
});

// Last: it stops the server.
describe('shutdown', () => {
  it('SIGTERM ends open terminals (exit reason shutdown) and an MCP stream, kills the processes, and exits 0', async () => {
    const terminal = await open(`/api/ws/services/${web.id}/terminal`);
    terminal.send('sleep 4343\n');
    const deadline = Date.now() + 10_000;
    while (!(await processes(webContainer)).includes('sleep 4343')) {
      if (Date.now() > deadline) throw new Error('sleep never started');
      await new Promise((r) => setTimeout(r, 100));
    }
    const mcp = await fetch(new URL('/api/mcp/sse', server.url), { headers: { authorization: `Bearer ${server.token}` } });
    expect(mcp.status).toBe(200);
    const mcpEnded = mcp.text();
    const started = Date.now();
    expect(await server.stop()).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
    await mcpEnded;
    expect((await exitOf(terminal)).exit).toMatchObject({ type: 'exit', reason: 'shutdown' });
    expect(await processes(webContainer)).not.toContain('sleep 4343');
  }, 30_000);
});
