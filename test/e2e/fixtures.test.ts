/**
 * Proves the deployment-test fixtures work on the real Docker engine: the locally built stand-ins
 * for registry images (test/provision/images.sh), the Git smart-HTTP server, and the app file maps.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGitServer, type GitServer } from '../helpers/git-server.js';
import {
  APP_PORT,
  BUILD_FAILURE_MESSAGE,
  dockerfileApp,
  dockerfileAtCustomPath,
  exitsAtOnce,
  failingDockerfile,
  nodeApp,
  slowBuild,
  staticSite,
  worker,
  type FileMap,
} from '../fixtures/apps.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const MINUTE = 60_000;

async function docker(args: string[], timeout = 5 * MINUTE): Promise<string> {
  const { stdout } = await run('docker', args, { timeout, maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

/** Runs a command, resolving with its output and exit code whatever the code. */
async function attempt(cmd: string, args: string[], timeout = 5 * MINUTE): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(cmd, args, { timeout, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number | string; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Polls until `url` answers 200, returning the body. */
async function waitForHttp(url: string, timeoutMs = 30_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      if (res.ok) return await res.text();
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms (last: ${last})`);
}

const scratch: string[] = [];
async function writeContext(files: FileMap): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'slipway-fixture-ctx-'));
  scratch.push(dir);
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), content);
  }
  return dir;
}

const images: string[] = [];
const containers: string[] = [];
function imageName(kind: string): string {
  const name = `slipway-fixture-test/${kind}:${randomBytes(4).toString('hex')}`;
  images.push(name);
  return name;
}

beforeAll(async () => {
  // Builds the stand-in images the first time (minutes), then answers from its cache (seconds).
  const started = Date.now();
  try {
    await run('bash', [path.join(ROOT, 'test/provision/images.sh')], { cwd: ROOT, timeout: 15 * MINUTE, maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`test/provision/images.sh failed: ${e.stderr || e.message}`);
  }
  if (Date.now() - started > 10_000) console.log(`images.sh took ${((Date.now() - started) / 1000).toFixed(1)} s`);
}, 15 * MINUTE);

afterAll(async () => {
  for (const id of containers) await attempt('docker', ['rm', '-f', id]);
  for (const image of images) await attempt('docker', ['rmi', '-f', image]);
  for (const dir of scratch) await rm(dir, { recursive: true, force: true });
}, 2 * MINUTE);

describe('stand-in images', () => {
  it('busybox:latest runs echo, and busybox:1 is the same image', async () => {
    expect((await docker(['run', '--rm', 'busybox:latest', 'echo', 'ok'])).trim()).toBe('ok');
    const id = (ref: string) => docker(['image', 'inspect', '--format', '{{.Id}}', ref]);
    expect(await id('busybox:1')).toBe(await id('busybox:latest'));
    // The applets the fixtures rely on.
    const out = await docker(['run', '--rm', 'busybox:latest', 'sh', '-c', 'command -v httpd sleep seq wget && echo applets-ok']);
    expect(out).toContain('applets-ok');
  });

  it('node:22-bookworm-slim has node and npm on PATH', async () => {
    expect((await docker(['run', '--rm', 'node:22-bookworm-slim', 'node', '-e', 'console.log(1+1)'])).trim()).toBe('2');
    expect((await docker(['run', '--rm', 'node:22-bookworm-slim', 'npm', '--version'])).trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('caddy:2 has caddy on PATH', async () => {
    // Debian's caddy says "2.6.2"; the official image says "v2.x.y h1:…".
    expect(await docker(['run', '--rm', 'caddy:2', 'caddy', 'version'])).toMatch(/^v?2\.\d+/);
  });

  it('debian:bookworm-slim is the debootstrapped root, with apt sources for the reachable mirror', async () => {
    const out = await docker([
      'run',
      '--rm',
      'debian:bookworm-slim',
      'sh',
      '-c',
      'cat /etc/debian_version; cat /etc/apt/sources.list.d/debian.sources',
    ]);
    expect(out).toMatch(/^12\./);
    expect(out).toMatch(/Suites: bookworm/);
  });
});

describe('git server', () => {
  let git: GitServer;
  beforeAll(async () => {
    git = await startGitServer();
  });
  afterAll(async () => {
    await git?.close();
  });

  async function clone(url: string, extra: string[] = []): Promise<{ code: number; dir: string; stderr: string }> {
    const dir = await mkdtemp(path.join(tmpdir(), 'slipway-fixture-clone-'));
    scratch.push(dir);
    const r = await attempt('git', ['-c', 'credential.helper=', 'clone', '--depth', '1', ...extra, url, path.join(dir, 'repo')], MINUTE);
    return { code: r.code, dir: path.join(dir, 'repo'), stderr: r.stderr };
  }

  it('serves a shallow clone of main with the files and the commit sha', async () => {
    const { cloneUrl, commitSha } = await git.addRepo('web', {
      ...dockerfileApp('hello from git'),
      'bin/data.bin': Buffer.from([0, 1, 2, 255]),
    });
    expect(cloneUrl).toBe(`${git.url}/web.git`);
    const { code, dir, stderr } = await clone(cloneUrl, ['--branch', 'main']);
    expect(code, stderr).toBe(0);
    expect(await readFile(path.join(dir, 'www/index.html'), 'utf8')).toBe('hello from git\n');
    expect(await readFile(path.join(dir, 'Dockerfile'), 'utf8')).toContain('FROM busybox:latest');
    expect([...(await readFile(path.join(dir, 'bin/data.bin')))]).toEqual([0, 1, 2, 255]);
    expect((await run('git', ['-C', dir, 'rev-parse', 'HEAD'])).stdout.trim()).toBe(commitSha);
    expect((await run('git', ['-C', dir, 'rev-parse', '--is-shallow-repository'])).stdout.trim()).toBe('true');
    const log = (await run('git', ['-C', dir, 'log', '--format=%an <%ae>'])).stdout.trim();
    expect(log).toBe('Slipway Test <test@slipway.invalid>');
  });

  it('serves later commits, other branches, partial clones and ls-remote', async () => {
    const { cloneUrl, commitSha } = await git.addRepo('history', staticSite('v1'), {
      branch: 'trunk',
      commits: [{ message: 'v2', files: staticSite('v2') }, { files: { 'extra.txt': 'x', 'index.html': 'v3\n' } }],
    });
    const shallow = await clone(cloneUrl, ['--branch', 'trunk']);
    expect(shallow.code, shallow.stderr).toBe(0);
    expect(await readFile(path.join(shallow.dir, 'index.html'), 'utf8')).toBe('v3\n');
    expect((await run('git', ['-C', shallow.dir, 'rev-parse', 'HEAD'])).stdout.trim()).toBe(commitSha);

    const { commitSha: featureSha } = await git.pushCommit('history', { 'index.html': 'feature\n' }, { branch: 'feature' });
    const remote = (await run('git', ['ls-remote', cloneUrl])).stdout;
    expect(remote).toContain(`${commitSha}\trefs/heads/trunk`);
    expect(remote).toContain(`${featureSha}\trefs/heads/feature`);
    expect(remote).toMatch(new RegExp(`${commitSha}\\tHEAD`));

    const filtered = await clone(cloneUrl, ['--filter=blob:none', '--branch', 'feature']);
    expect(filtered.code, filtered.stderr).toBe(0);
    expect(await readFile(path.join(filtered.dir, 'index.html'), 'utf8')).toBe('feature\n');
  });

  it('publishes a new version when a repository is added again', async () => {
    const first = await git.addRepo('versions', { ...dockerfileApp('v1'), 'old/only-in-v1.txt': 'old' });
    const second = await git.addRepo('versions', { ...dockerfileApp('v2'), old: 'now a file' });
    expect(second.cloneUrl).toBe(first.cloneUrl);
    expect(second.commitSha).not.toBe(first.commitSha);
    const { code, dir, stderr } = await clone(second.cloneUrl, ['--branch', 'main']);
    expect(code, stderr).toBe(0);
    expect(await readFile(path.join(dir, 'www/index.html'), 'utf8')).toBe('v2\n');
    expect(await readFile(path.join(dir, 'old'), 'utf8')).toBe('now a file');
    expect((await run('git', ['-C', dir, 'rev-parse', 'HEAD'])).stdout.trim()).toBe(second.commitSha);
    const third = await git.addRepo('versions', staticSite('v3'));
    const again = await clone(third.cloneUrl, ['--branch', 'main']);
    expect((await run('git', ['-C', again.dir, 'ls-tree', '-r', '--name-only', 'HEAD'])).stdout.trim()).toBe('index.html');
  });

  it('takes concurrent changes one at a time', async () => {
    const results = await Promise.all([
      git.addRepo('parallel-a', staticSite('a')),
      git.addRepo('parallel-b', staticSite('b')),
      git.addRepo('parallel-a', staticSite('a2')),
    ]);
    const remote = (await run('git', ['ls-remote', results[0].cloneUrl, 'refs/heads/main'])).stdout;
    expect(remote.split('\t')[0]).toBe(results[2].commitSha);
    expect(new Set(results.map((r) => r.commitSha)).size).toBe(3);
  });

  it('passes gzip request bodies to git http-backend, and logs requests', async () => {
    const { cloneUrl, commitSha } = await git.addRepo('gzip', staticSite('gzip'));
    const pkt = (line: string) => `${(line.length + 4).toString(16).padStart(4, '0')}${line}`;
    const body = gzipSync(Buffer.from(`${pkt(`want ${commitSha}\n`)}0000${pkt('done\n')}`));
    const res = await fetch(`${cloneUrl}/git-upload-pack`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-git-upload-pack-request', 'Content-Encoding': 'gzip' },
      body,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-git-upload-pack-result');
    const answer = Buffer.from(await res.arrayBuffer());
    expect(answer.includes(Buffer.from('PACK'))).toBe(true);
    expect(git.requests.at(-1)).toMatchObject({ method: 'POST', path: '/gzip.git/git-upload-pack', status: 200, contentEncoding: 'gzip' });
  });

  it('answers 404 for a missing repository', async () => {
    const res = await fetch(`${git.url}/nope.git/info/refs?service=git-upload-pack`);
    expect(res.status).toBe(404);
    const r = await clone(`${git.url}/nope.git`);
    expect(r.code).not.toBe(0);
  });

  it('makes token repositories require basic auth', async () => {
    const token = 'secret-token';
    const { cloneUrl, commitSha } = await git.addRepo('private', dockerfileApp('private app'), { token });

    const res = await fetch(`${cloneUrl}/info/refs?service=git-upload-pack`);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Basic/);

    const refused = await clone(cloneUrl, ['--branch', 'main']);
    expect(refused.code).not.toBe(0);
    const wrong = await clone(git.authUrl('private', 'wrong'), ['--branch', 'main']);
    expect(wrong.code).not.toBe(0);

    const port = new URL(git.url).port;
    const ok = await clone(`http://x:${token}@127.0.0.1:${port}/private.git`, ['--branch', 'main']);
    expect(ok.code, ok.stderr).toBe(0);
    expect((await run('git', ['-C', ok.dir, 'rev-parse', 'HEAD'])).stdout.trim()).toBe(commitSha);
    expect(git.authUrl('private', token)).toBe(`http://x:${token}@127.0.0.1:${port}/private.git`);
    expect(git.requests.filter((r) => r.path.startsWith('/private.git/') && r.status === 200).every((r) => r.user === 'x')).toBe(true);
  });
});

describe('app fixtures on Docker', () => {
  async function runDetached(image: string, args: string[] = [], command: string[] = []): Promise<string> {
    const id = (await docker(['run', '-d', ...args, image, ...command])).trim();
    containers.push(id);
    return id;
  }

  it(
    'dockerfileApp builds and answers its message over HTTP',
    async () => {
      const image = imageName('web');
      await docker(['build', '-t', image, await writeContext(dockerfileApp('hello from docker'))]);
      const port = await freePort();
      const id = await runDetached(image, ['-p', `127.0.0.1:${port}:${APP_PORT}`]);
      expect(await waitForHttp(`http://127.0.0.1:${port}/`)).toBe('hello from docker\n');
      expect((await attempt('docker', ['logs', id])).stdout).toContain('started');
      const stopStart = Date.now();
      await docker(['stop', id]);
      expect(Date.now() - stopStart).toBeLessThan(5_000); // the TERM trap: no 10 s grace period
    },
    2 * MINUTE,
  );

  it(
    'dockerfileAtCustomPath builds with -f docker/web.Dockerfile',
    async () => {
      const files = dockerfileAtCustomPath('custom path');
      expect(files.Dockerfile).toBeUndefined();
      const ctx = await writeContext(files);
      const image = imageName('custom');
      await docker(['build', '-f', path.join(ctx, 'docker/web.Dockerfile'), '-t', image, ctx]);
      const port = await freePort();
      await runDetached(image, ['-p', `127.0.0.1:${port}:${APP_PORT}`]);
      expect(await waitForHttp(`http://127.0.0.1:${port}/`)).toBe('custom path\n');
    },
    2 * MINUTE,
  );

  it(
    'failingDockerfile fails its build with a recognisable message',
    async () => {
      // --force-rm: the legacy builder otherwise keeps the failed step's container (and its parent image).
      const r = await attempt('docker', ['build', '--force-rm', '-t', imageName('failing'), await writeContext(failingDockerfile())]);
      expect(r.code).not.toBe(0);
      expect(r.stdout + r.stderr).toContain(BUILD_FAILURE_MESSAGE);
    },
    2 * MINUTE,
  );

  it(
    'exitsAtOnce prints boom and exits 3',
    async () => {
      const image = imageName('exits');
      await docker(['build', '-t', image, await writeContext(exitsAtOnce())]);
      const r = await attempt('docker', ['run', '--rm', image]);
      expect(r.code).toBe(3);
      expect(r.stdout.trim()).toBe('boom');
    },
    2 * MINUTE,
  );

  it(
    'slowBuild takes its seconds and prints progress, every time (no layer cache)',
    async () => {
      for (let i = 0; i < 2; i++) {
        const started = Date.now();
        const r = await attempt('docker', ['build', '-t', imageName('slow'), await writeContext(slowBuild(2))]);
        expect(r.code, r.stderr).toBe(0);
        expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);
        expect(r.stdout + r.stderr).toContain('slow build: 2/2');
        expect(r.stdout + r.stderr).toContain('slow build: done');
      }
    },
    2 * MINUTE,
  );

  it(
    'worker prints ticks and stops promptly',
    async () => {
      const image = imageName('worker');
      await docker(['build', '-t', image, await writeContext(worker())]);
      const id = await runDetached(image);
      const deadline = Date.now() + 15_000;
      let logs = '';
      while (Date.now() < deadline && !logs.includes('tick 2')) {
        await new Promise((r) => setTimeout(r, 300));
        logs = (await attempt('docker', ['logs', id])).stdout;
      }
      expect(logs).toMatch(/tick 1\ntick 2/);
      const stopStart = Date.now();
      await docker(['stop', id]);
      expect(Date.now() - stopStart).toBeLessThan(5_000);
    },
    2 * MINUTE,
  );

  it(
    'nodeApp runs with npm start in node:22-bookworm-slim, with no network',
    async () => {
      const ctx = await writeContext(nodeApp('hello from node'));
      const port = await freePort();
      // npm install needs nothing (no dependencies) even with networking off.
      const install = await attempt('docker', [
        'run',
        '--rm',
        '--network',
        'none',
        '-v',
        `${ctx}:/app`,
        '-w',
        '/app',
        'node:22-bookworm-slim',
        'npm',
        'install',
        '--no-audit',
        '--no-fund',
      ]);
      expect(install.code, install.stderr).toBe(0);
      const id = await runDetached(
        'node:22-bookworm-slim',
        ['-p', `127.0.0.1:${port}:8080`, '-e', 'PORT=8080', '-v', `${ctx}:/app`, '-w', '/app'],
        ['npm', 'start'],
      );
      expect(await waitForHttp(`http://127.0.0.1:${port}/`)).toBe('hello from node\n');
      expect((await attempt('docker', ['logs', id])).stdout).toContain('listening on 8080');
    },
    2 * MINUTE,
  );

  it(
    'staticSite is served by caddy file-server',
    async () => {
      const ctx = await writeContext(staticSite('hello static'));
      const port = await freePort();
      await runDetached(
        'caddy:2',
        ['-p', `127.0.0.1:${port}:8080`, '-v', `${ctx}:/srv:ro`],
        ['caddy', 'file-server', '--root', '/srv', '--listen', ':8080'],
      );
      expect(await waitForHttp(`http://127.0.0.1:${port}/`)).toBe('hello static\n');
    },
    2 * MINUTE,
  );
});
