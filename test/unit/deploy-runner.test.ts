import { readdir } from 'node:fs/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { DeploymentRecord, ServiceRecord } from '../../src/domain/types.js';
import type { Actor, CreateServiceInput } from '../../src/index.js';
import type { DeployConfig } from '../../src/platform/platform-config.js';
import { createRuntimeHarness, FakeDatabaseAdmin, runnerSteps, until, type RuntimeHarness } from '../helpers/runtime-fakes.js';

/**
 * The DeployRunner with the real pipeline, analyzer and services on SQLite in memory, over fakes
 * of the container engine, git, the host-port forwarder and the health probe.
 */
const admin: Actor = { keyId: 'admin', access: 'write', projectIds: null };

const DOCKERFILE = 'FROM node:22-bookworm-slim\nWORKDIR /app\nCOPY . .\nCMD ["node", "server.js"]\n';
const SERVER_JS = "require('http').createServer((req, res) => res.end('hi')).listen(process.env.PORT);\n";
const DOCKERFILE_APP = { Dockerfile: DOCKERFILE, 'server.js': SERVER_JS };
const EXPRESS_APP = {
  'package.json': JSON.stringify({
    name: 'api',
    version: '1.0.0',
    scripts: { start: 'node index.js' },
    dependencies: { express: '^4.21.0' },
  }),
  'index.js': "const app = require('express')(); app.get('/', (q, s) => s.send('ok')); app.listen(process.env.PORT);\n",
};

let h: RuntimeHarness;
const { deployment, logs, queue, finished, container } = runnerSteps(() => h, admin, 5000);

afterEach(async () => {
  await h?.close();
});

async function setup(deploy: Partial<DeployConfig> = {}, databaseAdmin?: FakeDatabaseAdmin): Promise<RuntimeHarness> {
  h = await createRuntimeHarness({ deploy, ...(databaseAdmin ? { databaseAdmin } : {}) });
  return h;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const sha = (seed: string) =>
  seed
    .padEnd(40, '0')
    .replace(/[^0-9a-f]/g, 'a')
    .slice(0, 40);

async function project(name = 'Shop') {
  return h.services.projects.create(admin, { name, description: '' });
}

/** A fresh harness with one project; `startRunner` starts the runner before the project is made. */
async function freshProject({ startRunner }: { startRunner: boolean }) {
  await setup();
  if (startRunner) await h.runner.start();
  return project();
}

/** freshProject() with the repository service "web" (the Dockerfile app) in it. */
async function freshWeb(opts: { startRunner: boolean }) {
  const p = await freshProject(opts);
  return { p, web: await repoService(p.id, 'web') };
}

/** A repository service whose repository exists in the fake git source. */
async function repoService(
  projectId: string,
  name: string,
  files: Record<string, string> = DOCKERFILE_APP,
  extra: Partial<CreateServiceInput> = {},
) {
  const commitSha = sha(`c0ffee${name}`);
  h.git.repos.set(`https://git.test/acme/${name}.git`, { files, commitSha });
  const view = await h.services.serviceCreation.create(admin, projectId, { name, repoFullName: `acme/${name}`, ...extra });
  return { ...(await service(view.id)), commitSha };
}

async function service(id: string): Promise<ServiceRecord> {
  const record = await h.database.store.projects.getService(id);
  if (!record) throw new Error(`no service ${id}`);
  return record;
}

async function deploy(serviceId: string): Promise<DeploymentRecord> {
  return finished(await queue(serviceId));
}

async function deployOk(serviceId: string): Promise<DeploymentRecord> {
  const d = await deploy(serviceId);
  expect(d.status, (await logs(d.id)).join('\n')).toBe('succeeded');
  return d;
}

async function deployFailed(serviceId: string): Promise<DeploymentRecord> {
  const d = await deploy(serviceId);
  expect(d.status).toBe('failed');
  return d;
}

describe('a deployment from a repository', () => {
  it('goes queued -> running -> succeeded and makes the service active and reachable behind its host port', async () => {
    const { p, web } = await freshWeb({ startRunner: false });
    h.engine.build.block = true;
    const id = await queue(web.id);
    expect((await deployment(id)).status).toBe('queued');
    await h.runner.start();

    const running = await until(async () => {
      const d = await deployment(id);
      return d.status === 'running' && h.engine.activeBuilds === 1 ? d : null;
    });
    expect(running.startedAt).toBeInstanceOf(Date);
    expect(running.finishedAt).toBeNull();
    expect((await service(web.id)).status).toBe('deploying');
    h.engine.releaseBuilds();

    const d = await finished(id);
    const lines = await logs(id);
    expect(d.status, lines.join('\n')).toBe('succeeded');
    expect(d.startedAt!.getTime()).toBeLessThanOrEqual(d.finishedAt!.getTime());
    expect(d.imageTag).toBe(`slipway-${web.id}-${id}`);
    expect(d.containerName).toBe(`slipway-${web.id}-${id}`);
    expect(d.commitSha).toBe(web.commitSha);

    const after = await service(web.id);
    expect(after).toMatchObject({ status: 'active', reachable: true, detectedBuildMethod: 'dockerfile' });
    expect(after.lastDeployedAt).toBeInstanceOf(Date);
    expect((await h.database.store.projects.get(p.id))?.status).toBe('active');

    const c = container(d.containerName);
    expect(c).toMatchObject({ running: true, restartPolicy: true, image: d.imageTag, network: `slipway-${p.id}`, aliases: [web.slug] });
    expect(c.ip).toMatch(/^10\.0\.0\.\d+$/);
    expect(c.labels).toEqual({
      'slipway.managed': 'true',
      'slipway.instance': 'default',
      'slipway.service': web.id,
      'slipway.deployment': id,
      'slipway.project': p.id,
      // The project's first environment has the project's id: its network is the project's of before.
      'slipway.environment': p.id,
    });
    expect(c.env.PORT).toBe('3000');
    expect(h.engine.hasImage(d.imageTag!)).toBe(true);
    expect(h.engine.builds.map((b) => b.tag)).toEqual([d.imageTag]);
    expect(h.git.clones).toEqual([{ url: 'https://git.test/acme/web.git', branch: 'main', token: null }]);

    expect(h.forwarder.targets.get(web.hostPort)).toEqual({ host: c.ip, port: 3000 });
    expect(h.health.httpCalls).toContainEqual({ host: c.ip, port: 3000, path: '/' });
    expect(h.proxy.applied.length).toBeGreaterThan(0);
    expect(lines).toContain(`Checked out ${web.commitSha}`);
    expect(lines).toContain(`Deployment succeeded: ${d.containerName}`);
    expect(await readdir(h.buildsDir)).toEqual([]);
  });

  it('on a redeploy, points the host port at the new container before it stops the old one (its image is kept for rollbacks)', async () => {
    const { web } = await freshWeb({ startRunner: true });
    const first = await deployOk(web.id);
    const old = container(first.containerName);

    const second = await deployOk(web.id);
    const current = container(second.containerName);
    expect(current.ip).not.toBe(old.ip);
    expect(h.forwarder.targets.get(web.hostPort)).toEqual({ host: current.ip, port: 3000 });
    expect(h.engine.byName(first.containerName!)).toBeUndefined();
    expect(h.engine.removedContainers).toEqual([first.containerName]);
    expect(h.engine.hasImage(first.imageTag!)).toBe(true);
    expect(h.engine.hasImage(second.imageTag!)).toBe(true);
    expect(h.engine.containersOf(web.id).map((c) => c.name)).toEqual([second.containerName]);

    const j = h.journal;
    const keep = j.indexOf(`engine.keepRunning ${second.containerName}`);
    const switched = j.indexOf(`forwarder.set ${web.hostPort} -> ${current.ip}:3000`);
    const stopped = j.indexOf(`engine.stopAndRemove ${first.containerName}`);
    expect(keep).toBeGreaterThanOrEqual(0);
    expect(switched).toBeGreaterThan(keep);
    expect(stopped).toBeGreaterThan(switched);
    expect((await logs(second.id)).find((l) => l.startsWith(`Stopping the previous container ${first.containerName}`))).toMatch(
      /drained in \d+ ms/,
    );
  });

  it('fails a deployment whose host port another program took, saying so, and the previous container keeps serving', async () => {
    const { web } = await freshWeb({ startRunner: true });
    const first = await deployOk(web.id);
    h.forwarder.failNext = 'EADDRINUSE';
    const second = await deployFailed(web.id);
    expect((await logs(second.id)).at(-1)).toBe(
      `Deployment failed: host port 127.0.0.1:${web.hostPort} is in use by another program on this host; stop it, then deploy again`,
    );
    expect(h.engine.containersOf(web.id).map((c) => c.name)).toEqual([first.containerName]);
  });

  it('runs one deployment at a time per service: two queued for one service run in order', async () => {
    const { web } = await freshWeb({ startRunner: false });
    h.engine.build.block = true;
    const firstId = await queue(web.id);
    await sleep(5);
    const secondId = await queue(web.id);
    await h.runner.start();

    await until(async () => (await deployment(firstId)).status === 'running' && h.engine.activeBuilds === 1);
    await sleep(700); // longer than the runner's poll interval
    expect((await deployment(secondId)).status).toBe('queued');
    expect(h.engine.builds).toHaveLength(1);
    h.engine.releaseBuilds();

    const first = await finished(firstId);
    const second = await finished(secondId);
    expect([first.status, second.status]).toEqual(['succeeded', 'succeeded']);
    expect(second.startedAt!.getTime()).toBeGreaterThanOrEqual(first.finishedAt!.getTime());
    expect(h.engine.builds.map((b) => b.tag)).toEqual([first.imageTag, second.imageTag]);
    expect(h.engine.maxActiveBuilds).toBe(1);
  });

  it('never builds more than buildConcurrency at once across services', async () => {
    await setup({ buildConcurrency: 2 });
    const p = await project();
    const services = [await repoService(p.id, 'one'), await repoService(p.id, 'two'), await repoService(p.id, 'three')];
    h.engine.build.block = true;
    const ids: string[] = [];
    for (const s of services) ids.push(await queue(s.id));
    await h.runner.start();

    await until(() => h.engine.activeBuilds === 2);
    await sleep(700);
    expect(h.engine.activeBuilds).toBe(2);
    const statuses = await Promise.all(ids.map(async (id) => (await deployment(id)).status));
    expect(statuses.filter((s) => s === 'running')).toHaveLength(2);
    expect(statuses.filter((s) => s === 'queued')).toHaveLength(1);

    h.engine.releaseBuilds();
    const done = await Promise.all(ids.map((id) => finished(id)));
    expect(done.map((d) => d.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect(h.engine.maxActiveBuilds).toBe(2);
    expect(h.engine.builds).toHaveLength(3);
  });

  it('takes nothing with buildConcurrency 0', async () => {
    await setup({ buildConcurrency: 0 });
    const p = await project();
    const web = await repoService(p.id, 'web');
    const id = await queue(web.id);
    await h.runner.start();
    await sleep(800);
    expect((await deployment(id)).status).toBe('queued');
    expect(h.git.clones).toEqual([]);
    expect(h.engine.builds).toEqual([]);
  });
});

describe('choosing the builder', () => {
  it('auto builds with the Dockerfile when the repository has one', async () => {
    const { web } = await freshWeb({ startRunner: true });
    const d = await deployOk(web.id);
    expect(h.engine.builds[0]).toMatchObject({ dockerfile: 'Dockerfile', dockerfileText: DOCKERFILE });
    expect((await service(web.id)).detectedBuildMethod).toBe('dockerfile');
    expect(await logs(d.id)).toContain('Building with Dockerfile (found a build file, buildMethod auto)');
    expect(h.engine.pulls).toEqual([]);
  });

  it('auto builds with the analyzer when there is no Dockerfile, and records the framework', async () => {
    const p = await freshProject({ startRunner: true });
    const api = await repoService(p.id, 'api', EXPRESS_APP);
    const d = await deployOk(api.id);
    const after = await service(api.id);
    expect(after.detectedBuildMethod).toBe('analyzer');
    expect(after.framework).toBe('express');
    const build = h.engine.builds[0]!;
    expect(build.dockerfile).toBe('.slipway.Dockerfile');
    expect(build.dockerfileText?.split('\n')[0]).toBe('# Generated by the Slipway analyzer (framework: express)');
    // The base image was missing, so it was pulled before the build.
    expect(h.engine.pulls).toEqual([h.config.deploy.analyzerImages.node]);
    const lines = await logs(d.id);
    expect(lines).toContain('No build file at Dockerfile: building with the analyzer');
    expect(lines).toContain('Generated Dockerfile:');
  });

  it('buildMethod dockerfile without a build file fails with the reason in the log', async () => {
    const p = await freshProject({ startRunner: true });
    const api = await repoService(p.id, 'api', EXPRESS_APP, { buildMethod: 'dockerfile' });
    const d = await deployFailed(api.id);
    expect(await logs(d.id)).toContain(
      'Deployment failed: buildMethod is dockerfile but there is no build file at Dockerfile (relative to the repository root)',
    );
    expect(h.engine.builds).toEqual([]);
    expect(await service(api.id)).toMatchObject({ status: 'failed', reachable: false });
  });

  it('builds with dockerfilePath, and SERVICE_DOCKERFILE_PATH in the env wins over it', async () => {
    const p = await freshProject({ startRunner: true });
    const files = {
      'docker/Prod.Dockerfile': `${DOCKERFILE}# prod\n`,
      'docker/Env.Dockerfile': `${DOCKERFILE}# env\n`,
      'server.js': SERVER_JS,
    };
    const web = await repoService(p.id, 'web', files, { dockerfilePath: 'docker/Prod.Dockerfile' });
    await deployOk(web.id);
    expect(h.engine.builds[0]).toMatchObject({ dockerfile: 'docker/Prod.Dockerfile', dockerfileText: files['docker/Prod.Dockerfile'] });
    expect((await service(web.id)).detectedBuildMethod).toBe('dockerfile');

    await h.services.env.set(admin, web.id, { key: 'SERVICE_DOCKERFILE_PATH', value: 'docker/Env.Dockerfile' });
    await deployOk(web.id);
    expect(h.engine.builds[1]).toMatchObject({ dockerfile: 'docker/Env.Dockerfile', dockerfileText: files['docker/Env.Dockerfile'] });
  });
});

describe('workers, images and databases', () => {
  it('a worker gets no host port and is not reachable', async () => {
    const p = await freshProject({ startRunner: true });
    const worker = await repoService(p.id, 'jobs', DOCKERFILE_APP, { runtimeMode: 'worker' });
    const d = await deployOk(worker.id);
    expect(h.forwarder.callsFor(worker.hostPort).filter((c) => c.target !== null)).toEqual([]);
    expect(h.forwarder.targets.has(worker.hostPort)).toBe(false);
    expect(await service(worker.id)).toMatchObject({ status: 'active', reachable: false });
    expect(h.health.httpCalls).toEqual([]);
    expect(container(d.containerName).running).toBe(true);
    expect(await logs(d.id)).toContain('The worker is running');
  });

  it('a worker that exits at once fails with its exit code and last lines', async () => {
    const p = await freshProject({ startRunner: true });
    const worker = await repoService(p.id, 'jobs', DOCKERFILE_APP, { runtimeMode: 'worker' });
    h.engine.run = { exitAtOnce: { code: 2, tail: ['QUEUE_URL is not set'] } };
    const d = await deployFailed(worker.id);
    const lines = await logs(d.id);
    expect(lines).toContain('QUEUE_URL is not set');
    expect(lines).toContain('Deployment failed: The container exited with code 2 before it served');
    expect(h.engine.containersOf(worker.id)).toEqual([]);
    expect(await service(worker.id)).toMatchObject({ status: 'failed', reachable: false });
  });

  it('turning a web service into a worker closes its host port on the next deployment', async () => {
    const { web } = await freshWeb({ startRunner: true });
    await deployOk(web.id);
    expect(h.forwarder.targets.has(web.hostPort)).toBe(true);

    await h.services.serviceChanges.update(admin, web.id, { runtimeMode: 'worker' });
    const d = await deployOk(web.id);
    expect(await service(web.id)).toMatchObject({ status: 'active', reachable: false });
    expect(h.engine.containersOf(web.id).map((c) => c.name)).toEqual([d.containerName]);
    // The old container is gone: the host port must not keep forwarding to its address.
    expect(h.forwarder.targets.get(web.hostPort), 'the host port still forwards to the removed web container').toBeUndefined();
  });

  it('an image service pulls only when the image is missing, tags it, and runs startCommand through sh -c', async () => {
    const p = await freshProject({ startRunner: true });
    const startCommand = 'nginx -g "daemon off;"';
    const view = await h.services.serviceCreation.create(admin, p.id, {
      name: 'proxy',
      repoUrl: 'container-image',
      containerImage: 'nginx:1.27',
      startCommand,
      internalPort: 80,
    });
    const first = await deployOk(view.id);
    expect(h.engine.pulls).toEqual(['nginx:1.27']);
    expect(h.engine.tags).toEqual([{ source: 'nginx:1.27', target: first.imageTag }]);
    expect(first.imageTag).toBe(`slipway-${view.id}-${first.id}`);
    expect(h.engine.runs[0]).toMatchObject({ image: first.imageTag, cmd: ['sh', '-c', startCommand] });
    expect(h.engine.builds).toEqual([]);
    expect(h.git.clones).toEqual([]);
    expect(h.forwarder.targets.get(view.hostPort)).toEqual({ host: container(first.containerName).ip, port: 80 });

    const second = await deployOk(view.id);
    expect(h.engine.pulls).toEqual(['nginx:1.27']);
    expect(await logs(second.id)).toContain('Image nginx:1.27 is present');
    expect(h.engine.hasImage('nginx:1.27')).toBe(true);
    // Kept for a rollback (ROLLBACK_KEEP, default 5).
    expect(h.engine.hasImage(first.imageTag!)).toBe(true);
  });

  it('a redis database mounts its volume at /data, requires its password, and is checked over TCP', async () => {
    const p = await freshProject({ startRunner: true });
    const view = await h.services.serviceCreation.create(admin, p.id, {
      name: 'cache',
      repoUrl: 'database',
      repoFullName: 'database:redis',
    });
    const d = await deployOk(view.id);
    const c = container(d.containerName);
    expect(h.engine.pulls).toEqual(['redis:7']);
    expect(c.volumes).toEqual([{ name: `slipway-${view.id}-data`, target: '/data' }]);
    expect(h.engine.volumes.has(`slipway-${view.id}-data`)).toBe(true);
    expect(c.cmd?.join(' ')).toContain('--requirepass');
    expect(c.env.REDIS_PASSWORD).toMatch(/^\S{16,}$/);
    expect(h.health.tcpCalls).toContainEqual({ host: c.ip, port: 6379 });
    expect(h.health.httpCalls).toEqual([]);
    expect(h.forwarder.targets.get(view.hostPort)).toEqual({ host: c.ip, port: 6379 });
    expect(await service(view.id)).toMatchObject({ status: 'active', reachable: true });
    expect((await logs(d.id)).join('\n')).not.toContain(c.env.REDIS_PASSWORD);
  });
});

describe('database readiness', () => {
  const notYet = () => new Error('connection refused: the database system is starting up');

  async function database(engine: string) {
    await h.runner.start();
    const p = await project();
    return h.services.serviceCreation.create(admin, p.id, { name: 'db', repoUrl: 'database', repoFullName: `database:${engine}` });
  }

  it("with a DatabaseAdmin, waits until the engine's own check answers, and logs which check passed", async () => {
    const check = new FakeDatabaseAdmin([notYet(), notYet(), 'SELECT 1 answered (PostgreSQL 17.2)']);
    await setup({ healthTimeoutMs: 5_000 }, check);
    const view = await database('postgres');
    const d = await deploy(view.id);
    const lines = await logs(d.id);
    expect(d.status, lines.join('\n')).toBe('succeeded');
    expect(lines).toContain('Database ready: SELECT 1 answered (PostgreSQL 17.2)');
    expect(check.checks).toHaveLength(3);
    const c = container(d.containerName);
    // The new container on the project network: the host port still forwards to the previous one.
    expect(check.checks[0]).toMatchObject({ serviceId: view.id, engine: 'postgres', host: c.ip, port: 5432 });
    expect(check.checks[0]!.env.POSTGRES_PASSWORD).toBe(c.env.POSTGRES_PASSWORD);
    expect(h.health.tcpCalls).toEqual([]);
    expect(await service(view.id)).toMatchObject({ status: 'active', reachable: true });
  });

  it('a database that never passes its check fails the deployment saying so, and keeps its data volume', async () => {
    const check = new FakeDatabaseAdmin([notYet()]);
    await setup({ healthTimeoutMs: 1_200 }, check);
    const view = await database('postgres');
    const d = await deploy(view.id);
    const lines = await logs(d.id);
    expect(d.status).toBe('failed');
    expect(lines).toContain(
      'Deployment failed: The database did not pass its readiness check within 1 s: connection refused: the database system is starting up',
    );
    expect(check.checks.length).toBeGreaterThanOrEqual(2);
    expect(lines.some((l) => l.startsWith('Database ready'))).toBe(false);
    expect(h.engine.containersOf(view.id)).toEqual([]);
    expect(h.engine.volumes.has(`slipway-${view.id}-data`)).toBe(true);
    expect(h.engine.removedVolumes).toEqual([]);
  });

  it('without a DatabaseAdmin, a database is checked over TCP as before', async () => {
    await setup();
    const view = await database('postgres');
    const d = await deployOk(view.id);
    expect(h.health.tcpCalls).toContainEqual({ host: container(d.containerName).ip, port: 5432 });
    expect((await logs(d.id)).some((l) => l.startsWith('Database ready'))).toBe(false);
  });

  it('a failed redeployment of a database never removes its data volume; only deleting the service does', async () => {
    await setup();
    const view = await database('redis');
    const live = await deployOk(view.id);
    const volume = `slipway-${view.id}-data`;
    h.engine.run = { exitAtOnce: { code: 1, tail: ['FATAL: could not lock the data directory'] } };
    const failed = await deployFailed(view.id);
    expect(await logs(failed.id)).toContain('Deployment failed: The container exited with code 1 before it served');
    expect(h.engine.removedContainers).toContain(`slipway-${view.id}-${failed.id}`);
    expect(h.engine.volumes.has(volume)).toBe(true);
    expect(h.engine.removedVolumes).toEqual([]);
    expect(container(live.containerName).running).toBe(true);

    await h.services.removal.deleteService(admin, view.id);
    expect(h.engine.removedVolumes).toEqual([volume]);
  });
});

describe('failures leave the live container alone', () => {
  interface FailureCase {
    name: string;
    /** Breaks the next deployment of the service created by `create`. */
    arrange: (s: ServiceRecord) => Promise<void> | void;
    reason: string | RegExp;
    create?: (projectId: string) => Promise<ServiceRecord>;
    /** Lines the log must hold besides the reason. */
    lines?: string[];
    /** Whether the failure happens once the candidate image exists. */
    madeImage: boolean;
    madeContainer: boolean;
  }

  const imageService = async (projectId: string) =>
    service(
      (
        await h.services.serviceCreation.create(admin, projectId, {
          name: 'img',
          repoUrl: 'container-image',
          containerImage: 'nginx:1.27',
          internalPort: 80,
        })
      ).id,
    );

  const cases: FailureCase[] = [
    {
      name: 'the clone fails',
      arrange: async (s) => {
        await h.services.serviceChanges.update(admin, s.id, { branch: 'release' });
      },
      reason:
        'Deployment failed: Could not clone https://git.test/acme/web.git at branch release: git clone failed (exit 128): fatal: Remote branch release not found in upstream origin',
      madeImage: false,
      madeContainer: false,
    },
    {
      name: 'the build fails',
      arrange: () => {
        h.engine.build = { fail: "The command '/bin/sh -c npm run build' returned a non-zero code: 1", lines: 5 };
      },
      reason: "Deployment failed: The build failed: The command '/bin/sh -c npm run build' returned a non-zero code: 1",
      lines: ['Step 5/5 : RUN something 5'],
      madeImage: true,
      madeContainer: false,
    },
    {
      name: 'the pull fails',
      create: imageService,
      arrange: () => {
        h.engine.images.delete('nginx:1.27');
        h.engine.pullFailures.set('nginx:1.27', 'manifest for nginx:1.27 not found: manifest unknown');
      },
      reason: 'Deployment failed: Could not pull nginx:1.27: manifest for nginx:1.27 not found: manifest unknown',
      madeImage: false,
      madeContainer: false,
    },
    {
      name: 'the container exits at once',
      arrange: () => {
        h.engine.run = {
          exitAtOnce: {
            code: 1,
            tail: [
              "Error: Cannot find module '/app/server.js'",
              '    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)',
            ],
          },
        };
      },
      reason: 'Deployment failed: The container exited with code 1 before it served',
      lines: ["Error: Cannot find module '/app/server.js'", '    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)'],
      madeImage: true,
      madeContainer: true,
    },
    {
      name: 'the container never answers',
      arrange: () => {
        h.engine.run = { silent: true };
      },
      reason: /^Deployment failed: The container did not answer on port 3000 within \d+ s; is internalPort right\?$/,
      madeImage: true,
      madeContainer: true,
    },
  ];

  for (const c of cases) {
    it(`${c.name}: the deployment fails with the reason and its candidate is removed`, async () => {
      const p = await freshProject({ startRunner: true });
      const s = c.create ? await c.create(p.id) : await repoService(p.id, 'web');
      const previous = await deployOk(s.id);
      const live = container(previous.containerName);
      const liveIp = live.ip;
      const forwarderCalls = h.forwarder.calls.length;

      await c.arrange(s);
      const id = await queue(s.id);
      const d = await finished(id);
      const records = await h.database.store.deployments.listLogs(id);
      const lines = records.map((r) => r.line);
      expect(d.status, lines.join('\n')).toBe('failed');
      expect(d.finishedAt).toBeInstanceOf(Date);
      expect(
        lines.some((l) => (typeof c.reason === 'string' ? l === c.reason : c.reason.test(l))),
        lines.join('\n'),
      ).toBe(true);
      for (const line of c.lines ?? []) expect(lines).toContain(line);
      if (c.name === 'the container exits at once') {
        // The dead container's last lines are reported as errors.
        for (const line of c.lines ?? []) expect(records.find((r) => r.line === line)?.stream).toBe('stderr');
      }

      const candidate = `slipway-${s.id}-${id}`;
      expect(h.engine.byName(candidate)).toBeUndefined();
      expect(h.engine.hasImage(candidate)).toBe(false);
      if (c.madeContainer) expect(h.engine.removedContainers).toContain(candidate);
      if (c.madeImage) expect(h.engine.removedImages).toContain(candidate);

      // What served before still serves, and the host port was not touched.
      expect(h.engine.byName(previous.containerName!)).toMatchObject({ running: true, ip: liveIp });
      expect(h.engine.hasImage(previous.imageTag!)).toBe(true);
      expect(h.forwarder.calls).toHaveLength(forwarderCalls);
      expect(h.forwarder.targets.get(s.hostPort)).toEqual({ host: liveIp, port: s.internalPort });
      expect(await service(s.id)).toMatchObject({ status: 'active', reachable: true });
      expect(await readdir(h.buildsDir)).toEqual([]);
    });
  }

  it('an engine that goes away after the claim fails the deployment with the reason', async () => {
    const { web } = await freshWeb({ startRunner: true });
    // The runner's own look before claiming finds it; the pipeline's, a moment later, does not.
    const ping = h.engine.ping.bind(h.engine);
    let pings = 0;
    h.engine.ping = async (signal) => {
      if (++pings > 1) throw new Error('connect ENOENT /var/run/docker.sock');
      return ping(signal);
    };
    const d = await deployFailed(web.id);
    expect(await logs(d.id)).toContain('Deployment failed: The Docker engine is unreachable: connect ENOENT /var/run/docker.sock');
    expect(h.git.clones).toEqual([]);
  });

  it('while the engine is unreachable, queued deployments wait (claimed by nobody, failed by nothing) and run once it is back', async () => {
    const { web } = await freshWeb({ startRunner: true });
    const ping = h.engine.ping.bind(h.engine);
    let pings = 0;
    h.engine.ping = async (signal) => {
      pings++;
      return ping(signal);
    };
    h.engine.pingError = 'connect ENOENT /var/run/docker.sock';
    const id = await queue(web.id);
    await sleep(3_000);
    expect((await deployment(id)).status).toBe('queued');
    expect(h.git.clones).toEqual([]);
    // The claim loop ticks every 500 ms; the engine is asked at most every 2 s while down.
    expect(pings).toBeLessThanOrEqual(3);
    expect(h.runnerLog.filter((l) => /Docker engine/.test(l.message))).toEqual([
      {
        message: 'the Docker engine is unreachable; queued deployments wait for it',
        extra: { error: 'connect ENOENT /var/run/docker.sock' },
      },
    ]);
    h.engine.pingError = null;
    const d = await finished(id, 8_000);
    expect(d.status, (await logs(id)).join('\n')).toBe('succeeded');
    expect(h.runnerLog.map((l) => l.message)).toContain('the Docker engine is reachable again');
  });

  it('a start with the engine down recovers once it answers, and logs the outage once however many passes it lasts', async () => {
    const { p, web } = await freshWeb({ startRunner: false });
    const stray = h.engine.addContainer({
      name: 'slipway-gone-x',
      image: 'slipway-gone-x',
      labels: {
        'slipway.managed': 'true',
        'slipway.instance': h.config.instanceId,
        'slipway.service': 'gone',
        'slipway.deployment': 'x',
        'slipway.project': p.id,
      },
    });
    h.engine.pingError = 'connect ENOENT /var/run/docker.sock';
    await h.runner.start();
    const id = await queue(web.id);
    for (let i = 0; i < 3; i++) await h.runner.maintain();
    await sleep(2_100);
    await h.runner.maintain();
    expect(h.runnerLog.map((l) => l.message)).toEqual(['the Docker engine is unreachable; queued deployments wait for it']);
    expect(h.engine.byName(stray.name)).toBeDefined();
    expect((await deployment(id)).status).toBe('queued');

    h.engine.pingError = null;
    await sleep(2_100);
    await h.runner.maintain();
    expect(h.runnerLog.map((l) => l.message)).toContain('the Docker engine is reachable again');
    expect(h.engine.byName(stray.name)).toBeUndefined();
    expect((await finished(id)).status).toBe('succeeded');
  });

  it('a reconcile failure that lasts is logged once, and again only after it cleared', async () => {
    const { web } = await freshWeb({ startRunner: true });
    await deployOk(web.id);
    const list = h.engine.listContainers.bind(h.engine);
    let broken = true;
    h.engine.listContainers = async (label) => {
      if (broken) throw new Error('engine says no');
      return list(label);
    };
    for (let i = 0; i < 3; i++) await h.runner.maintain();
    expect(h.runnerLog.filter((l) => l.message === 'reconcile failed')).toEqual([
      { message: 'reconcile failed', extra: { error: 'engine says no' } },
    ]);
    broken = false;
    await h.runner.maintain();
    broken = true;
    await h.runner.maintain();
    expect(h.runnerLog.filter((l) => l.message === 'reconcile failed')).toHaveLength(2);
  });

  it('a build that writes many lines has each of them in the log, in order', async () => {
    const { web } = await freshWeb({ startRunner: true });
    h.engine.build = { lines: 450 };
    const d = await deployOk(web.id);
    const steps = (await logs(d.id)).filter((l) => l.startsWith('Step '));
    expect(steps).toEqual(Array.from({ length: 450 }, (_, i) => `Step ${i + 1}/450 : RUN something ${i + 1}`));
  });

  it('a first deployment whose repository is unknown leaves the service failed', async () => {
    const p = await freshProject({ startRunner: true });
    const view = await h.services.serviceCreation.create(admin, p.id, { name: 'ghost', repoFullName: 'acme/ghost' });
    const d = await deployFailed(view.id);
    expect(
      (await logs(d.id)).some((l) =>
        l.startsWith(
          "Deployment failed: Could not clone https://git.test/acme/ghost.git at branch main: git clone failed (exit 128): fatal: repository 'https://git.test/acme/ghost.git' not found",
        ),
      ),
    ).toBe(true);
    expect(await service(view.id)).toMatchObject({ status: 'failed', reachable: false });
    expect(h.forwarder.calls).toEqual([]);
    expect(h.engine.containers.size).toBe(0);
  });

  it('an unresolved env reference fails before cloning', async () => {
    const { web } = await freshWeb({ startRunner: true });
    await h.services.env.set(admin, web.id, { key: 'DATABASE_URL', value: '${nosuch.DATABASE_URL}' });
    const d = await deployFailed(web.id);
    const lines = await logs(d.id);
    expect(lines).toContain(
      'Unresolved variable reference: DATABASE_URL: ${nosuch.DATABASE_URL}: no service with slug "nosuch" in this environment',
    );
    expect(lines).toContain('Deployment failed: Fix the variable references above, then deploy again');
    expect(h.git.clones).toEqual([]);
    expect(h.engine.builds).toEqual([]);
  });

  it('masks secret env values, and values built from them, as ******** in the log', async () => {
    const { web } = await freshWeb({ startRunner: true });
    await h.services.env.set(admin, web.id, { key: 'API_TOKEN', value: 's3cr3t-token-value', secret: true });
    await h.services.env.set(admin, web.id, { key: 'AUTH_HEADER', value: 'Bearer ${web.API_TOKEN}' });
    await h.services.env.set(admin, web.id, { key: 'PLAIN', value: 'visible-value' });
    h.engine.build = { echoArgs: true };
    const d = await deployOk(web.id);
    expect(h.engine.builds[0]!.buildArgs).toMatchObject({
      API_TOKEN: 's3cr3t-token-value',
      AUTH_HEADER: 'Bearer s3cr3t-token-value',
      PLAIN: 'visible-value',
    });
    const lines = await logs(d.id);
    expect(lines).toContain('ARG API_TOKEN=********');
    expect(lines).toContain('ARG AUTH_HEADER=********');
    expect(lines).toContain('ARG PLAIN=visible-value');
    expect(lines.filter((l) => l.includes('s3cr3t'))).toEqual([]);
  });
});

describe('abort and shutdown', () => {
  it('an abort of a running deployment (blocked in its build) ends it aborted quickly and cleans up', async () => {
    const { web } = await freshWeb({ startRunner: true });
    const previous = await deployOk(web.id);
    const liveIp = container(previous.containerName).ip;
    const forwarderCalls = h.forwarder.calls.length;

    h.engine.build.block = true;
    const id = await queue(web.id);
    await until(() => h.engine.activeBuilds === 1);
    const started = Date.now();
    await h.services.deployments.abort(admin, id);
    const d = await finished(id, 3_000);
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(d.status).toBe('aborted');
    expect(d.abortRequested).toBe(true);
    expect(d.finishedAt).toBeInstanceOf(Date);
    const lines = await logs(id);
    expect(lines).toContain('Abort requested; stopping the deployment');
    expect(lines).toContain('Deployment aborted; the previous container keeps serving');

    expect(h.engine.activeBuilds).toBe(0);
    expect(h.engine.hasImage(`slipway-${web.id}-${id}`)).toBe(false);
    expect(h.engine.byName(`slipway-${web.id}-${id}`)).toBeUndefined();
    expect(await readdir(h.buildsDir)).toEqual([]);
    expect(h.engine.byName(previous.containerName!)).toMatchObject({ running: true, ip: liveIp });
    expect(h.forwarder.calls).toHaveLength(forwarderCalls);
    expect(await service(web.id)).toMatchObject({ status: 'active', reachable: true });
  });

  it('an abort during the clone ends the deployment aborted', async () => {
    const { web } = await freshWeb({ startRunner: true });
    h.git.block = true;
    const id = await queue(web.id);
    await until(() => h.git.activeClones === 1);
    await h.services.deployments.abort(admin, id);
    const d = await finished(id, 2_000);
    expect(d.status).toBe('aborted');
    expect(h.git.activeClones).toBe(0);
    expect(h.engine.builds).toEqual([]);
    expect(await readdir(h.buildsDir)).toEqual([]);
  });

  it('stop() interrupts a running deployment, which ends failed saying why, and takes no more work', async () => {
    const { p, web } = await freshWeb({ startRunner: true });
    const other = await repoService(p.id, 'other');
    h.engine.build.block = true;
    const id = await queue(web.id);
    await until(() => h.engine.activeBuilds === 1);

    await h.runner.stop();
    const d = await deployment(id);
    expect(d.status).toBe('failed');
    expect(d.finishedAt).toBeInstanceOf(Date);
    expect(await logs(id)).toContain('Deployment failed: the server is shutting down');
    expect(h.engine.activeBuilds).toBe(0);
    expect(h.engine.hasImage(`slipway-${web.id}-${id}`)).toBe(false);

    const later = await queue(other.id);
    await sleep(700);
    expect((await deployment(later)).status).toBe('queued');
  });
});

describe('recovery after a crash', () => {
  const labels = (serviceId: string, deploymentId: string, projectId: string, instance = 'default') => ({
    'slipway.managed': 'true',
    'slipway.instance': instance,
    'slipway.service': serviceId,
    'slipway.deployment': deploymentId,
    'slipway.project': projectId,
  });

  /** The candidate container of a deployment, named and labelled as the runner makes it. */
  const addCandidate = (projectId: string, serviceId: string, deploymentId: string) =>
    h.engine.addContainer({
      name: `slipway-${serviceId}-${deploymentId}`,
      image: `slipway-${serviceId}-${deploymentId}`,
      labels: labels(serviceId, deploymentId, projectId),
    });

  /** A deployment the store says is running, as a process that died mid-deploy left it. */
  async function leftRunning(serviceId: string): Promise<string> {
    const id = await queue(serviceId);
    expect(await h.database.store.deployments.transition(id, ['queued'], { status: 'running', startedAt: new Date() })).toBe(true);
    return id;
  }

  it('fails deployments left running, removes containers that are not current, and points the host port back', async () => {
    const { p, web } = await freshWeb({ startRunner: true });
    const live = await deployOk(web.id);
    await h.runner.stop();

    const interrupted = await leftRunning(web.id);
    const candidate = addCandidate(p.id, web.id, interrupted);
    const stray = h.engine.addContainer({ name: 'slipway-gone-x', image: 'slipway-gone-x', labels: labels('gone', 'x', p.id) });
    const foreign = h.engine.addContainer({
      name: 'theirs-web-1',
      image: 'theirs',
      labels: labels('theirservice', 'theirdeployment', 'theirproject', 'another-install'),
    });
    // Docker restarted the live container while the platform was down: it has a new address.
    const restarted = h.engine.restart(live.containerName!);

    await h.runner.start();
    expect(h.runnerLog.filter((l) => l.message === 'recovery failed')).toEqual([]);
    const d = await deployment(interrupted);
    expect(d.status).toBe('failed');
    expect(d.finishedAt).toBeInstanceOf(Date);
    expect(await logs(interrupted)).toContain('The server stopped while this deployment was running; it was not finished. Deploy again.');

    expect(h.engine.byName(candidate.name)).toBeUndefined();
    expect(h.engine.byName(stray.name)).toBeUndefined();
    expect(h.engine.byName(foreign.name)).toBeDefined();
    expect(h.engine.byName(live.containerName!)).toMatchObject({ running: true });
    expect(h.forwarder.targets.get(web.hostPort)).toEqual({ host: restarted.ip, port: 3000 });
    expect(h.forwarder.calls.at(-1)).toEqual({ hostPort: web.hostPort, target: { host: restarted.ip, port: 3000 } });
    expect(await service(web.id)).toMatchObject({ status: 'active', reachable: true });
  });

  it('removes the candidate container of an interrupted first deployment (it never became current)', async () => {
    const { p, web } = await freshWeb({ startRunner: false });
    const interrupted = await leftRunning(web.id);
    const candidate = addCandidate(p.id, web.id, interrupted);

    await h.runner.start();
    expect((await deployment(interrupted)).status).toBe('failed');
    expect(h.engine.byName(candidate.name), 'a container of a failed deployment survived recovery').toBeUndefined();
    expect(h.forwarder.callsFor(web.hostPort).filter((c) => c.target !== null)).toEqual([]);
  });

  it('reconcile() collects the images of failed and aborted deployments only', async () => {
    const { web } = await freshWeb({ startRunner: false });
    const ids: Record<string, string> = {};
    for (const status of ['succeeded', 'failed', 'aborted', 'running', 'queued'] as const) {
      const id = await queue(web.id);
      if (status !== 'queued') await h.database.store.deployments.transition(id, ['queued'], { status });
      ids[status] = id;
      h.engine.addImage(`slipway-${web.id}-${id}`);
    }
    const unknown = `slipway-${web.id}-unknowndeployment`;
    const otherService = `slipway-otherservice-${ids.failed}`;
    for (const ref of [unknown, otherService, 'node:22-bookworm-slim', `someoneelse-${web.id}-${ids.failed}`]) h.engine.addImage(ref);

    await h.runner.reconcile();
    const tag = (status: string) => `slipway-${web.id}-${ids[status]}`;
    expect(h.engine.hasImage(tag('failed'))).toBe(false);
    expect(h.engine.hasImage(tag('aborted'))).toBe(false);
    for (const status of ['succeeded', 'running', 'queued']) expect(h.engine.hasImage(tag(status)), status).toBe(true);
    for (const ref of [unknown, otherService, 'node:22-bookworm-slim', `someoneelse-${web.id}-${ids.failed}`])
      expect(h.engine.hasImage(ref), ref).toBe(true);
    expect(h.engine.removedImages.sort()).toEqual([`${tag('aborted')}:latest`, `${tag('failed')}:latest`].sort());
  });
});

describe('removing services', () => {
  it('deleting a web service removes its containers, images and host port', async () => {
    const { web } = await freshWeb({ startRunner: true });
    const first = await deployOk(web.id);
    await h.services.deployments.create(admin, web.id).then((d) => finished(d.id));
    const remove = vi.spyOn(h.teardown, 'removeService');

    await h.services.removal.deleteService(admin, web.id);
    expect(remove).toHaveBeenCalledTimes(1);
    expect(remove.mock.calls[0]![0].id).toBe(web.id);
    expect(h.engine.containersOf(web.id)).toEqual([]);
    expect(await h.engine.listImageTags(`slipway-${web.id}-`)).toEqual([]);
    expect(h.engine.hasImage(first.imageTag!)).toBe(false);
    expect(h.forwarder.calls.at(-1)).toEqual({ hostPort: web.hostPort, target: null });
    expect(h.forwarder.targets.has(web.hostPort)).toBe(false);
    expect(h.engine.removedVolumes).toEqual([]);
  });

  it('deleting a database service also removes its data volume', async () => {
    const p = await freshProject({ startRunner: true });
    const view = await h.services.serviceCreation.create(admin, p.id, {
      name: 'cache',
      repoUrl: 'database',
      repoFullName: 'database:redis',
    });
    await deployOk(view.id);
    const volume = `slipway-${view.id}-data`;
    expect(h.engine.volumes.has(volume)).toBe(true);

    await h.services.removal.deleteService(admin, view.id);
    expect(h.engine.removedVolumes).toEqual([volume]);
    expect(h.engine.volumes.has(volume)).toBe(false);
    expect(h.engine.containersOf(view.id)).toEqual([]);
    expect(await h.engine.listImageTags(`slipway-${view.id}-`)).toEqual([]);
    expect(h.engine.hasImage('redis:7')).toBe(true);
    expect(h.forwarder.targets.has(view.hostPort)).toBe(false);
  });

  it('deleting a project removes the runtime of each of its services and its network', async () => {
    const { p, web } = await freshWeb({ startRunner: true });
    const db = await service(
      (await h.services.serviceCreation.create(admin, p.id, { name: 'cache', repoUrl: 'database', repoFullName: 'database:redis' })).id,
    );
    await deployOk(web.id);
    await deployOk(db.id);
    expect(h.engine.networks.has(`slipway-${p.id}`)).toBe(true);
    const remove = vi.spyOn(h.teardown, 'removeService');

    await h.services.projects.delete(admin, p.id);
    expect(remove.mock.calls.map((call) => call[0].id).sort()).toEqual([web.id, db.id].sort());
    expect(h.engine.containers.size).toBe(0);
    expect(await h.engine.listImageTags('slipway-')).toEqual([]);
    expect(h.engine.removedVolumes).toEqual([`slipway-${db.id}-data`]);
    expect(h.engine.removedNetworks).toEqual([`slipway-${p.id}`]);
    expect(h.forwarder.targets.size).toBe(0);
  });

  it('deleting a service while it deploys stops the deployment and leaves nothing of it behind', async () => {
    const { web } = await freshWeb({ startRunner: true });
    h.engine.build.block = true;
    const id = await queue(web.id);
    await until(() => h.engine.activeBuilds === 1);

    await h.services.removal.deleteService(admin, web.id);
    expect(h.engine.activeBuilds).toBe(0);
    expect(h.engine.containersOf(web.id)).toEqual([]);
    expect(await h.engine.listImageTags(`slipway-${web.id}-`)).toEqual([]);
    expect(await h.database.store.deployments.get(id)).toBeNull();
    expect(await h.database.store.projects.getService(web.id)).toBeNull();
    await sleep(100);
    expect(await h.database.store.deployments.listLogs(id), 'log lines of a deleted deployment were written after its deletion').toEqual(
      [],
    );
  });
});

describe('rollback', () => {
  it('keeps the images of the last ROLLBACK_KEEP live deployments and runs one again without a clone or a build', async () => {
    await setup({ rollbackKeep: 2 });
    await h.runner.start();
    const p = await project();
    const web = await repoService(p.id, 'web');
    const first = await deployOk(web.id);
    const second = await deployOk(web.id);
    const third = await deployOk(web.id);
    expect(h.engine.hasImage(first.imageTag!)).toBe(false);
    expect(h.engine.hasImage(second.imageTag!)).toBe(true);
    expect(h.engine.hasImage(third.imageTag!)).toBe(true);
    expect(await rejection(h.services.deployments.rollback(admin, first.id))).toMatchObject({ code: 'image_gone' });

    const clones = h.git.clones.length;
    const builds = h.engine.builds.length;
    const view = await h.services.deployments.rollback(admin, second.id);
    expect(view).toMatchObject({ trigger: 'rollback', rollbackOf: second.id, status: 'queued', commitSha: second.commitSha });
    const rolled = await finished(view.id);
    expect(rolled.status, (await logs(rolled.id)).join('\n')).toBe('succeeded');
    expect(h.git.clones.length).toBe(clones);
    expect(h.engine.builds.length).toBe(builds);
    expect(h.engine.tags.at(-1)).toEqual({ source: second.imageTag, target: rolled.imageTag });
    expect(h.engine.containersOf(web.id).map((c) => c.name)).toEqual([rolled.containerName]);
    expect((await h.services.serviceReader.overview(admin, web.id)).liveDeploymentId).toBe(rolled.id);
    // The rollback's own tag and the newest live one before it.
    expect(h.engine.hasImage(third.imageTag!)).toBe(true);
    expect(h.engine.hasImage(rolled.imageTag!)).toBe(true);
  });

  it('refuses a deployment that never went live with 409', async () => {
    await setup();
    const p = await project();
    const web = await repoService(p.id, 'web');
    const id = await queue(web.id);
    expect(await rejection(h.services.deployments.rollback(admin, id))).toMatchObject({ code: 'conflict' });
    expect((await h.services.serviceReader.overview(admin, web.id)).liveDeploymentId).toBeNull();
  });
});
