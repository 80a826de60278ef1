import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { docker, provisionDocker } from '../helpers/docker.js';
import { startArgs } from '../helpers/server-process.js';

/**
 * The top-level Dockerfile and compose.yaml: the image is built from the stand-in base image
 * (scripts/container/prepare-context.sh brings Node from npm), started with compose (or, when no
 * compose is installable, the equivalent `docker run`) on a temporary data volume with PROXY=none,
 * and must answer GET /api/health. Built images are tagged by a hash of their inputs: reruns reuse them.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);
const id = randomBytes(4).toString('hex');
const project = `slipway-image-test-${id}`;
/** The data volume: compose names it `<project>_slipway-data`; `docker run` gets this name. */
const volume = `${project}-data`;
let image = '';
let compose: string[] | null = null;
let port = 0;

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    return statSync(file).isDirectory() ? filesUnder(file) : [file];
  });
}

/** What the image is made of: Dockerfile, lockfile, package.json and the bundle. */
function inputsHash(): string {
  const hash = createHash('sha256');
  for (const file of ['Dockerfile', '.dockerignore', 'package.json', 'package-lock.json', ...filesUnder(path.join(ROOT, 'dist')).sort()]) {
    const full = path.isAbsolute(file) ? file : path.join(ROOT, file);
    hash.update(path.relative(ROOT, full)).update(readFileSync(full));
  }
  return hash.digest('hex').slice(0, 16);
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('the platform in a container', () => {
  beforeAll(async () => {
    await provisionDocker();
    startArgs(); // builds dist/ unless SLIPWAY_TEST_BUILT
    const { stdout: nodeVersion } = await run('bash', ['scripts/container/prepare-context.sh'], {
      cwd: ROOT,
      timeout: 5 * 60_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    image = `slipway-test/platform:${inputsHash()}`;
    const exists = await docker('image', 'inspect', '--format', '{{.Id}}', image).then(
      () => true,
      () => false,
    );
    if (!exists) await run('docker', ['build', '-q', '-t', image, '.'], { cwd: ROOT, timeout: 15 * 60_000, maxBuffer: 64 * 1024 * 1024 });
    expect(await docker('image', 'inspect', '--format', '{{ index .Config.Labels "org.slipway.node-version" }}', image)).toBe(
      nodeVersion.trim(),
    );
    const { stdout } = await run('bash', ['test/provision/compose.sh'], { cwd: ROOT, timeout: 5 * 60_000 });
    compose = stdout.trim() ? stdout.trim().split(' ') : null;
    port = await freePort();
  }, 25 * 60_000);

  afterAll(async () => {
    if (compose)
      await run(compose[0]!, [...compose.slice(1), '-f', 'compose.yaml', '-p', project, 'down', '-v', '--timeout', '5'], {
        cwd: ROOT,
        env: composeEnv(),
        timeout: 60_000,
      }).catch(() => {});
    await docker('rm', '-f', project).catch(() => {});
    await docker('volume', 'rm', '-f', volume).catch(() => {});
    await removeEarlierImages();
  }, 90_000);

  /**
   * Each change of the bundle makes a new image (its tag is the inputs' hash): the ones earlier runs
   * built are removed, except any made in the last hour (another checkout's run may be about to start it).
   */
  async function removeEarlierImages(): Promise<void> {
    const listed = await docker('image', 'ls', 'slipway-test/platform', '--format', '{{.Repository}}:{{.Tag}}|{{.CreatedAt}}').catch(
      () => '',
    );
    const hourAgo = Date.now() - 60 * 60_000;
    const earlier = listed
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split('|') as [string, string])
      .filter(
        ([ref, created]) =>
          ref !== image &&
          Date.parse(
            created
              .replace(/ [A-Z]+$/, '')
              .replace(' ', 'T')
              .replace(' ', ''),
          ) < hourAgo,
      )
      .map(([ref]) => ref);
    if (earlier.length > 0) await docker('image', 'rm', ...earlier).catch(() => {});
  }

  function composeEnv(): NodeJS.ProcessEnv {
    return { ...process.env, SLIPWAY_IMAGE: image, PORT: String(port), HOST: '127.0.0.1', PROXY: 'none', BOOTSTRAP_API_KEY: '' };
  }

  it('starts with the Docker socket and a data volume mounted, on the host network, and answers GET /api/health', async () => {
    if (compose) {
      await run(compose[0]!, [...compose.slice(1), '-f', 'compose.yaml', '-p', project, 'up', '-d', '--no-build'], {
        cwd: ROOT,
        env: composeEnv(),
        timeout: 120_000,
      });
    } else {
      console.warn('container-image.test: no Docker Compose is installable here; running the equivalent `docker run` of compose.yaml');
      await docker(
        'run',
        '-d',
        '--name',
        project,
        '--network',
        'host',
        '--restart',
        'unless-stopped',
        '-e',
        'HOST=127.0.0.1',
        '-e',
        `PORT=${port}`,
        '-e',
        'DATA_DIR=/data',
        '-e',
        'DOCKER_SOCKET=/var/run/docker.sock',
        '-e',
        'PROXY=none',
        '-v',
        '/var/run/docker.sock:/var/run/docker.sock',
        '-v',
        `${volume}:/data`,
        image,
      );
    }
    const deadline = Date.now() + 60_000;
    let health: Record<string, { status: string }> | null = null;
    while (!health && Date.now() < deadline) {
      health = await fetch(`http://127.0.0.1:${port}/api/health`, { signal: AbortSignal.timeout(2_000) }).then(
        (r) => (r.ok ? (r.json() as Promise<Record<string, { status: string }>>) : null),
        () => null,
      );
      if (!health) await new Promise((r) => setTimeout(r, 500));
    }
    const logs = compose
      ? (
          await run(compose[0]!, [...compose.slice(1), '-f', 'compose.yaml', '-p', project, 'logs', '--no-color'], {
            cwd: ROOT,
            env: composeEnv(),
          })
        ).stdout
      : await docker('logs', project);
    expect(health, logs).toMatchObject({
      ok: true,
      status: 'ok',
      engine: { status: 'up' },
      proxy: { status: 'disabled' },
      database: { status: 'up' },
    });
    // First start of the empty volume: the key is printed, as plain lines.
    expect(logs).toMatch(/^.* {5}slw_\S+$/m);
    expect(logs).toContain('"dataDir":"/data"');
  }, 180_000);
});
