import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { docker, provisionDocker } from '../helpers/docker.js';
import { startArgs } from '../helpers/server-process.js';

/**
 * `npm start` on a Debian machine that is itself a container, as root, with no engine answering: a
 * container of the Debian stand-in with Debian's docker.io installed (the apt-get part of the
 * provisioning is the same in or out of a container), the checkout and this Node mounted read-only,
 * no socket mounted. With the capabilities dockerd needs it starts one inside the container and
 * says so; without them it refuses with one line saying why. The engine it starts lives and dies
 * with the container: the host's engine is never touched.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);
const BASE = 'slipway-test/debian:bookworm';
const DOCKERFILE = `FROM ${BASE}
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io iptables procps libatomic1 >/dev/null && rm -rf /var/lib/apt/lists/*
`;
const id = randomBytes(4).toString('hex');
const names: string[] = [];
let image = '';

async function containerRun(name: string, extra: string[]): Promise<void> {
  names.push(name);
  await docker(
    'run',
    '-d',
    '--name',
    name,
    '--label',
    'slipway.test=engine-in-container',
    ...extra,
    '-v',
    `${ROOT}:/app:ro`,
    '-v',
    `${process.execPath}:/usr/local/bin/node:ro`,
    '-w',
    '/app',
    '-e',
    'DATA_DIR=/tmp/slipway-data',
    '-e',
    'PROXY=none',
    '-p',
    '127.0.0.1::3000',
    image,
    'node',
    ...startArgs(),
  );
}

async function logsOf(name: string): Promise<string> {
  const { stdout, stderr } = await run('docker', ['logs', name], { maxBuffer: 16 * 1024 * 1024 });
  return `${stdout}${stderr}`;
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | null>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

describe('npm start in a container without an engine', () => {
  beforeAll(async () => {
    await provisionDocker({ images: 'debian' });
    startArgs(); // builds dist/ unless SLIPWAY_TEST_BUILT
    const baseId = await docker('image', 'inspect', '--format', '{{.Id}}', BASE);
    image = `slipway-test/debian-docker:${createHash('sha256').update(DOCKERFILE).update(baseId).digest('hex').slice(0, 16)}`;
    const exists = await docker('image', 'inspect', '--format', '{{.Id}}', image).then(
      () => true,
      () => false,
    );
    if (!exists) {
      const context = path.join(tmpdir(), `slipway-debian-docker-${id}`);
      mkdirSync(context, { recursive: true });
      writeFileSync(path.join(context, 'Dockerfile'), DOCKERFILE);
      try {
        await run('docker', ['build', '-q', '--network', 'host', '-t', image, context], {
          timeout: 10 * 60_000,
          maxBuffer: 16 * 1024 * 1024,
        });
      } finally {
        rmSync(context, { recursive: true, force: true });
      }
    }
  }, 15 * 60_000);

  afterAll(async () => {
    for (const name of names) await docker('rm', '-f', '-v', name).catch(() => undefined);
  });

  it('as root with the capabilities dockerd needs: starts one inside the container, says so on one line, and serves', async () => {
    const name = `slipway-engine-in-container-${id}`;
    // What dockerd needs (mounts and cgroups, networks and its packet filter) and nothing more;
    // /var/lib/docker on a tmpfs: overlay2 cannot sit on the container's own overlay root.
    await containerRun(name, [
      '--cap-add',
      'SYS_ADMIN',
      '--cap-add',
      'NET_ADMIN',
      '--security-opt',
      'seccomp=unconfined',
      '--security-opt',
      'apparmor=unconfined',
      '--tmpfs',
      '/var/lib/docker',
    ]);
    const logs = await until('slipway listening', 120_000, async () => {
      const text = await logsOf(name);
      if (/"msg":"failed to start"|^slipway: no Docker engine/m.test(text) && !text.includes('starting one inside this container')) {
        throw new Error(`the platform did not start:\n${text}`);
      }
      return text.includes('"msg":"slipway listening"') ? text : null;
    });
    const said = logs.split('\n').filter((line) => line.startsWith('slipway: '));
    expect(said).toEqual([
      "slipway: no Docker engine answers at /var/run/docker.sock: starting one inside this container (/app/scripts/provision/docker.sh; dockerd logs to /tmp/slipway-dockerd.log); mounting the host's socket (-v /var/run/docker.sock:/var/run/docker.sock) uses the host's engine instead.",
    ]);
    expect(logs).toContain('"msg":"Docker engine ready"');
    // The engine answering is the one inside the container: its own dockerd, not the host's.
    expect(await docker('exec', name, 'pgrep', '-x', 'dockerd')).toMatch(/^\d+$/);
    const inner = await docker('exec', name, 'docker', 'info', '--format', '{{.ID}}');
    expect(inner).not.toBe(await docker('info', '--format', '{{.ID}}'));
    const published = await docker('port', name, '3000/tcp');
    const health = await until('GET /api/health', 30_000, async () => {
      const res = await fetch(`http://${published.split('\n')[0]}/api/health`, { signal: AbortSignal.timeout(5000) }).catch(() => null);
      return res ? ((await res.json()) as { status: string; engine: { status: string } }) : null;
    });
    expect(health).toMatchObject({ status: 'ok', engine: { status: 'up' } });
  }, 180_000);

  it('in a container without them: refuses with one line saying why and what to do instead', async () => {
    const name = `slipway-engine-refused-${id}`;
    await containerRun(name, []);
    const exit = await until('the refusal', 60_000, async () => {
      const state = await docker('inspect', '--format', '{{.State.Status}} {{.State.ExitCode}}', name);
      return state.startsWith('exited') ? Number(state.split(' ')[1]) : null;
    });
    expect(exit).toBe(1);
    const logs = (await logsOf(name)).trim();
    expect(logs.split('\n')).toHaveLength(1);
    expect(logs).toMatch(
      /^slipway: no Docker engine answers at \/var\/run\/docker\.sock \(connect ENOENT \/var\/run\/docker\.sock\): this container cannot run one: it lacks CAP_SYS_ADMIN, CAP_NET_ADMIN, which dockerd needs: mount the host's socket \(-v \/var\/run\/docker\.sock:\/var\/run\/docker\.sock\), or give the container those capabilities \(--privileged\)\.$/,
    );
  }, 90_000);
});
