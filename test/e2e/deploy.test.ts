import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { containersWithLabel, httpText, imageTags, ownPortRange, provisionDocker } from '../helpers/docker.js';
import { deploy, waitForDeployment, waitForLogLine } from '../helpers/deployments.js';
import { startGitServer } from '../helpers/git-server.js';
import { readSse } from '../helpers/sse.js';
import * as apps from '../fixtures/apps.js';

/**
 * Deployments on the real Docker engine, from repositories served by a local Git server, each
 * checked from outside: HTTP on the host port, and `docker ps` showing what should run.
 */
let server: ServerProcess;
let call: ReturnType<typeof api>;
let git: Awaited<ReturnType<typeof startGitServer>>;
let projectId: string;

beforeAll(async () => {
  await provisionDocker();
  git = await startGitServer();
  server = await startServerProcess({
    BUILD_CONCURRENCY: '2',
    GIT_BASE_URL: git.url,
    HEALTH_TIMEOUT_MS: '20000',
    STOP_GRACE_SECONDS: '1',
    WORKER_SETTLE_MS: '1500',
    HOST_PORT_RANGE: ownPortRange(),
  });
  call = api(server.url, server.token);
  projectId = (await call('POST', '/api/projects', { name: `deploy-${Date.now()}` })).json.project.id;
}, 20 * 60_000);

afterAll(async () => {
  if (call && projectId) await call('DELETE', `/api/projects/${projectId}`);
  await server?.dispose();
  await git?.close();
});

async function service(body: Record<string, unknown>): Promise<{ id: string; hostPort: number; slug: string }> {
  const res = await call('POST', `/api/projects/${projectId}/services`, body);
  if (res.status !== 201) throw new Error(`${res.status} ${res.text}`);
  return res.json.service;
}

async function overview(id: string) {
  return (await call('GET', `/api/services/${id}/overview`)).json;
}

describe('repository services', () => {
  it('builds a Dockerfile app, serves it on the host port, and replaces it on redeploy', async () => {
    const repo = await git.addRepo('acme/hello', apps.dockerfileApp('hello v1'));
    const web = await service({ name: 'hello', repoFullName: 'acme/hello', internalPort: 3000 });
    const first = await deploy(call, web.id);
    expect(first.deployment.status, first.logs.join('\n')).toBe('succeeded');
    expect(first.deployment.commitSha).toBe(repo.commitSha);
    expect(first.deployment.imageTag).toBe(`slipway-${web.id}-${first.deployment.id}`);
    expect(first.deployment.containerName).toBe(`slipway-${web.id}-${first.deployment.id}`);
    expect(first.deployment.startedAt).not.toBeNull();
    expect(first.deployment.finishedAt).not.toBeNull();
    const view = await overview(web.id);
    expect(view.service).toMatchObject({
      status: 'active',
      reachable: true,
      localUrl: `http://127.0.0.1:${web.hostPort}`,
      detectedBuildMethod: 'dockerfile',
    });
    expect(view.service.lastDeployedAt).not.toBeNull();
    expect((await httpText(view.service.localUrl))?.text).toContain('hello v1');
    expect(await containersWithLabel(`slipway.service=${web.id}`)).toEqual([first.deployment.containerName]);
    const project = (await call('GET', '/api/projects')).json.projects.find((p: { id: string }) => p.id === projectId);
    expect(project.status).toBe('active');

    await git.addRepo('acme/hello', apps.dockerfileApp('hello v2'));
    const second = await deploy(call, web.id);
    expect(second.deployment.status, second.logs.join('\n')).toBe('succeeded');
    expect((await httpText(`http://127.0.0.1:${web.hostPort}`))?.text).toContain('hello v2');
    expect(await containersWithLabel(`slipway.service=${web.id}`)).toEqual([second.deployment.containerName]);
    // The first deployment's image stays for a rollback (ROLLBACK_KEEP, default 5).
    expect((await imageTags(`slipway-${web.id}-`)).sort()).toEqual(
      [`slipway-${web.id}-${first.deployment.id}:latest`, `slipway-${web.id}-${second.deployment.id}:latest`].sort(),
    );
  });

  it('uses dockerfilePath, and SERVICE_DOCKERFILE_PATH over it', async () => {
    const repo = await git.addRepo('acme/custom-path', apps.dockerfileAtCustomPath('custom path'));
    const byField = await service({
      name: 'by-field',
      repoFullName: null,
      repoUrl: repo.cloneUrl,
      dockerfilePath: 'docker/web.Dockerfile',
    });
    const byEnv = await service({
      name: 'by-env',
      repoFullName: null,
      repoUrl: repo.cloneUrl,
      dockerfilePath: 'wrong/Dockerfile',
      env: [{ key: 'SERVICE_DOCKERFILE_PATH', value: 'docker/web.Dockerfile' }],
    });
    const [a, b] = await Promise.all([deploy(call, byField.id), deploy(call, byEnv.id)]);
    expect(a.deployment.status, a.logs.join('\n')).toBe('succeeded');
    expect(b.deployment.status, b.logs.join('\n')).toBe('succeeded');
    expect((await httpText(`http://127.0.0.1:${byEnv.hostPort}`))?.text).toContain('custom path');
  });

  it('fails a forced Dockerfile build without one, saying why', async () => {
    const repo = await git.addRepo('acme/no-dockerfile', apps.nodeApp('never built'));
    const forced = await service({ name: 'forced', repoFullName: null, repoUrl: repo.cloneUrl, buildMethod: 'dockerfile' });
    const result = await deploy(call, forced.id);
    expect(result.deployment.status).toBe('failed');
    expect(result.logs.join('\n')).toMatch(/buildMethod is dockerfile but there is no build file at Dockerfile/);
    expect(await containersWithLabel(`slipway.service=${forced.id}`)).toEqual([]);
  });

  it('builds a Node app with the analyzer and shows the generated Dockerfile', async () => {
    const repo = await git.addRepo('acme/node-app', apps.nodeApp('from node'));
    const node = await service({ name: 'node', repoFullName: null, repoUrl: repo.cloneUrl });
    const result = await deploy(call, node.id);
    expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
    expect(result.logs).toContain('Generated Dockerfile:');
    expect(result.logs.some((l) => /^\s+FROM node:22-bookworm-slim/.test(l))).toBe(true);
    expect((await overview(node.id)).service).toMatchObject({ detectedBuildMethod: 'analyzer', framework: 'node' });
    expect((await httpText(`http://127.0.0.1:${node.hostPort}`))?.text).toContain('from node');
  });

  it('serves a static site through Caddy', async () => {
    const repo = await git.addRepo('acme/site', apps.staticSite('static hello'));
    const site = await service({ name: 'site', repoFullName: null, repoUrl: repo.cloneUrl, internalPort: 8080 });
    const result = await deploy(call, site.id);
    expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
    expect((await overview(site.id)).service.framework).toBe('static');
    expect((await httpText(`http://127.0.0.1:${site.hostPort}`))?.text).toContain('static hello');
  });

  it('clones a private repository with the service token and never logs it', async () => {
    const repo = await git.addRepo('acme/private', apps.dockerfileApp('private'), { token: 'tok-s3cret-value' });
    const denied = await service({ name: 'no-token', repoFullName: null, repoUrl: repo.cloneUrl });
    expect((await deploy(call, denied.id)).deployment.status).toBe('failed');
    const allowed = await service({ name: 'with-token', repoFullName: null, repoUrl: repo.cloneUrl, gitToken: 'tok-s3cret-value' });
    const result = await deploy(call, allowed.id);
    expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
    expect(result.logs.join('\n')).not.toContain('tok-s3cret-value');
  });
});

describe('logs', () => {
  it('masks secret values in build logs and closes the runtime stream when the container is replaced', async () => {
    const files = {
      ...apps.dockerfileApp('logs v1'),
      Dockerfile: [
        'FROM busybox:latest',
        'ARG API_SECRET',
        'RUN echo "build sees $API_SECRET"',
        'COPY www/ /www/',
        'CMD ["sh", "-c", "echo started; exec httpd -f -v -p 3000 -h /www"]',
        '',
      ].join('\n'),
    };
    const repo = await git.addRepo('acme/logs', files);
    // A value of this run's own: a build of the same Dockerfile with the same value elsewhere on this engine (another
    // run beside this one) would leave its RUN step in the build cache, and this build would print nothing for it.
    const secret = `hunter2-very-secret-${randomBytes(4).toString('hex')}`;
    const web = await service({
      name: 'logs',
      repoFullName: null,
      repoUrl: repo.cloneUrl,
      env: [{ key: 'API_SECRET', value: secret, secret: true }],
    });
    const first = await deploy(call, web.id);
    expect(first.deployment.status, first.logs.join('\n')).toBe('succeeded');
    expect(first.logs.join('\n')).not.toContain(secret);
    expect(first.logs).toContain('build sees ********');

    let redeployed = false;
    const stream = await readSse(`${server.url}/api/services/${web.id}/runtime-logs/stream`, {
      token: server.token,
      until: () => false,
      timeoutMs: 60_000,
      onFrame: (frame) => {
        if (frame.event === 'status' && !frame.data.closed && !redeployed) {
          redeployed = true;
          void call('POST', `/api/services/${web.id}/deployments`);
        }
      },
    });
    expect(stream.frames[0]!.event).toBe('snapshot');
    expect(stream.frames[0]!.data.map((l: { line: string }) => l.line)).toContain('started');
    expect(stream.ended).toBe(true);
    expect(stream.frames.at(-1)).toMatchObject({ event: 'status', data: { ok: true, closed: true } });
  });
});

describe('image services and workers', () => {
  it('runs a container image with startCommand', async () => {
    const image = await service({
      name: 'image',
      repoUrl: 'container-image',
      containerImage: 'busybox:latest',
      internalPort: 3000,
      startCommand: 'mkdir -p /www && echo image-ok > /www/index.html && exec httpd -f -p 3000 -h /www',
    });
    const result = await deploy(call, image.id);
    expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
    expect((await httpText(`http://127.0.0.1:${image.hostPort}`))?.text).toContain('image-ok');
  });

  it('runs a worker that publishes nothing, and streams its runtime log', async () => {
    const repo = await git.addRepo('acme/worker', apps.worker());
    const worker = await service({ name: 'worker', repoFullName: null, repoUrl: repo.cloneUrl, runtimeMode: 'worker' });
    const result = await deploy(call, worker.id);
    expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
    expect(await httpText(`http://127.0.0.1:${worker.hostPort}`, 1000)).toBeNull();
    expect(await containersWithLabel(`slipway.service=${worker.id}`, false)).toHaveLength(1);
    const stream = await readSse(`${server.url}/api/services/${worker.id}/runtime-logs/stream`, {
      token: server.token,
      until: (frames) => frames.filter((f) => f.event === 'log').length >= 2,
      timeoutMs: 10_000,
    });
    expect(stream.frames[0]!.event).toBe('snapshot');
    expect(stream.frames.find((f) => f.event === 'status')?.data).toEqual({ ok: true, closed: false });
    const lines = stream.frames.filter((f) => f.event === 'log').map((f) => f.data);
    expect(lines[0].line).toMatch(/tick/);
    expect(lines[1].id).toBeGreaterThan(lines[0].id);

    // Subscribers that leave free their Docker log streams: the server's open files come back down.
    const openFiles = () => readdirSync(`/proc/${server.child.pid}/fd`).length;
    const before = openFiles();
    for (let i = 0; i < 10; i++) {
      await readSse(`${server.url}/api/services/${worker.id}/runtime-logs/stream`, {
        token: server.token,
        until: (frames) => frames.some((f) => f.event === 'log'),
      });
    }
    await new Promise((r) => setTimeout(r, 500));
    expect(openFiles()).toBeLessThan(before + 5);
  });
});

describe('failures keep the previous deployment serving', () => {
  it('reports each failure in the logs and leaves the live container alone', async () => {
    const repo = await git.addRepo('acme/steady', apps.dockerfileApp('steady'));
    const steady = await service({ name: 'steady', repoFullName: null, repoUrl: repo.cloneUrl });
    const good = await deploy(call, steady.id);
    expect(good.deployment.status, good.logs.join('\n')).toBe('succeeded');

    const attempt = async (patch: Record<string, unknown>, files: Record<string, string> | null, expected: RegExp) => {
      if (files) await git.addRepo('acme/steady', files);
      if (Object.keys(patch).length) await call('PATCH', `/api/services/${steady.id}`, patch);
      const result = await deploy(call, steady.id);
      expect(result.deployment.status, result.logs.join('\n')).toBe('failed');
      expect(result.logs.join('\n')).toMatch(expected);
      const answer = await httpText(`http://127.0.0.1:${steady.hostPort}`);
      expect(answer?.text, `${answer?.status} ${JSON.stringify(await overview(steady.id))} ${server.output().slice(-3000)}`).toContain(
        'steady',
      );
      expect(await containersWithLabel(`slipway.service=${steady.id}`)).toEqual([good.deployment.containerName]);
    };
    await attempt({ branch: 'no-such-branch' }, null, /Could not clone .* at branch no-such-branch/);
    await attempt({ branch: 'main' }, apps.failingDockerfile(), /The build failed: .*/);
    await attempt({}, apps.exitsAtOnce(), /boom[\s\S]*The container exited with code 3/);
    expect((await overview(steady.id)).service).toMatchObject({ status: 'active', reachable: true });
  });

  it('fails a repository that does not exist and an image that cannot be pulled', async () => {
    const missing = await service({ name: 'missing', repoFullName: 'acme/does-not-exist' });
    const a = await deploy(call, missing.id);
    expect(a.deployment.status).toBe('failed');
    expect(a.logs.join('\n')).toMatch(/Could not clone/);
    const unpullable = await service({ name: 'unpullable', repoUrl: 'container-image', containerImage: 'registry.invalid/none/such:1' });
    const b = await deploy(call, unpullable.id);
    expect(b.deployment.status).toBe('failed');
    expect(b.logs.join('\n')).toMatch(/Could not pull registry.invalid\/none\/such:1/);
  });
});

describe('abort', () => {
  it('ends a build within 5 s and leaves nothing half-built running', async () => {
    const repo = await git.addRepo('acme/slow', apps.dockerfileApp('before abort'));
    const slow = await service({ name: 'slow', repoFullName: null, repoUrl: repo.cloneUrl });
    const live = await deploy(call, slow.id);
    expect(live.deployment.status).toBe('succeeded');
    await git.addRepo('acme/slow', apps.slowBuild(120));
    const { deployment } = (await call('POST', `/api/services/${slow.id}/deployments`)).json;
    await waitForLogLine(call, deployment.id, /Building image/);
    await new Promise((r) => setTimeout(r, 1500));
    const started = Date.now();
    expect((await call('POST', `/api/deployments/${deployment.id}/abort`)).json).toEqual({ accepted: true });
    const result = await waitForDeployment(call, deployment.id, 10_000);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(result.deployment.status).toBe('aborted');
    expect((await call('POST', `/api/deployments/${deployment.id}/abort`)).status).toBe(409);
    expect(await containersWithLabel(`slipway.service=${slow.id}`)).toEqual([live.deployment.containerName]);
    expect(await imageTags(`slipway-${slow.id}-${deployment.id}`)).toEqual([]);
    expect((await httpText(`http://127.0.0.1:${slow.hostPort}`))?.text).toContain('before abort');
  });
});

describe('deletion', () => {
  it('removes the containers and images of a deleted service', async () => {
    const repo = await git.addRepo('acme/doomed', apps.dockerfileApp('doomed'));
    const doomed = await service({ name: 'doomed', repoFullName: null, repoUrl: repo.cloneUrl });
    expect((await deploy(call, doomed.id)).deployment.status).toBe('succeeded');
    expect((await call('DELETE', `/api/services/${doomed.id}`)).json.ok).toBe(true);
    expect(await containersWithLabel(`slipway.service=${doomed.id}`)).toEqual([]);
    expect(await imageTags(`slipway-${doomed.id}-`)).toEqual([]);
    expect(await httpText(`http://127.0.0.1:${doomed.hostPort}`, 1000)).toBeNull();
  });
});
