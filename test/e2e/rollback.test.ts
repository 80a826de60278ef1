import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { containersWithLabel, httpText, imageTags, provisionDocker } from '../helpers/docker.js';
import { deploy, waitForDeployment } from '../helpers/deployments.js';
import { startGitServer } from '../helpers/git-server.js';
import * as apps from '../fixtures/apps.js';
import { OpenAiStandin } from '../standins/ai-standins.js';

/**
 * Rollbacks on the real Docker engine: a repository service deployed three times with
 * ROLLBACK_KEEP=2, then rolled back to the second deployment (its image runs again, no clone, no
 * build), while the first one's image is gone (409 image_gone). A failed build is then explained
 * over HTTP by an OpenAI stand-in: what it was sent, and what the platform answered.
 */
let server: ServerProcess;
let call: ReturnType<typeof api>;
let git: Awaited<ReturnType<typeof startGitServer>>;
let projectId: string;

beforeAll(async () => {
  await provisionDocker();
  git = await startGitServer();
  server = await startServerProcess({
    BUILD_CONCURRENCY: '1',
    GIT_BASE_URL: git.url,
    HEALTH_TIMEOUT_MS: '20000',
    STOP_GRACE_SECONDS: '1',
    ROLLBACK_KEEP: '2',
  });
  call = api(server.url, server.token);
  projectId = (await call('POST', '/api/projects', { name: `rollback-${Date.now()}` })).json.project.id;
}, 20 * 60_000);

afterAll(async () => {
  if (call && projectId) await call('DELETE', `/api/projects/${projectId}`);
  await server?.dispose();
  await git?.close();
});

describe('rollback', () => {
  it(
    'runs a kept image again through a checked cutover; a collected one is 409 image_gone',
    async () => {
      await git.addRepo('acme/roll', apps.dockerfileApp('roll v1'));
      const web = (
        await call('POST', `/api/projects/${projectId}/services`, { name: 'roll', repoFullName: 'acme/roll', internalPort: 3000 })
      ).json.service as { id: string; hostPort: number };
      const first = await deploy(call, web.id);
      expect(first.deployment.status, first.logs.join('\n')).toBe('succeeded');
      await git.addRepo('acme/roll', apps.dockerfileApp('roll v2'));
      const second = await deploy(call, web.id);
      expect(second.deployment.status, second.logs.join('\n')).toBe('succeeded');
      await git.addRepo('acme/roll', apps.dockerfileApp('roll v3'));
      const third = await deploy(call, web.id);
      expect(third.deployment.status, third.logs.join('\n')).toBe('succeeded');
      expect((await httpText(`http://127.0.0.1:${web.hostPort}`))?.text).toContain('roll v3');

      // ROLLBACK_KEEP=2: the live image and the one before it.
      expect((await imageTags(`slipway-${web.id}-`)).sort()).toEqual(
        [`slipway-${web.id}-${second.deployment.id}:latest`, `slipway-${web.id}-${third.deployment.id}:latest`].sort(),
      );
      const gone = await call('POST', `/api/deployments/${first.deployment.id}/rollback`);
      expect(gone.status, gone.text).toBe(409);
      expect(gone.json.error).toBe('image_gone');

      const created = await call('POST', `/api/deployments/${second.deployment.id}/rollback`);
      expect(created.status, created.text).toBe(201);
      expect(created.json.deployment).toMatchObject({ status: 'queued', trigger: 'rollback', rollbackOf: second.deployment.id });
      const rolled = await waitForDeployment(call, created.json.deployment.id);
      expect(rolled.deployment.status, rolled.logs.join('\n')).toBe('succeeded');
      expect(rolled.logs.join('\n')).toContain(`Rolling back to deployment ${second.deployment.id}`);
      expect(rolled.logs.some((l) => /^Cloning|^Building image/.test(l))).toBe(false);
      expect(rolled.deployment.commitSha).toBe(second.deployment.commitSha);
      expect(rolled.deployment.imageTag).toBe(`slipway-${web.id}-${rolled.deployment.id}`);
      expect((await httpText(`http://127.0.0.1:${web.hostPort}`))?.text).toContain('roll v2');
      expect(await containersWithLabel(`slipway.service=${web.id}`)).toEqual([rolled.deployment.containerName]);

      const overview = (await call('GET', `/api/services/${web.id}/overview`)).json;
      expect(overview.liveDeploymentId).toBe(rolled.deployment.id);
      // Kept now: the rollback's tag (the live one) and the third deployment's, the newest before it.
      expect((await imageTags(`slipway-${web.id}-`)).sort()).toEqual(
        [`slipway-${web.id}-${third.deployment.id}:latest`, `slipway-${web.id}-${rolled.deployment.id}:latest`].sort(),
      );
      // Forward again, to the third deployment's image.
      const forward = await call('POST', `/api/deployments/${third.deployment.id}/rollback`);
      expect(forward.status, forward.text).toBe(201);
      const again = await waitForDeployment(call, forward.json.deployment.id);
      expect(again.deployment.status, again.logs.join('\n')).toBe('succeeded');
      expect((await httpText(`http://127.0.0.1:${web.hostPort}`))?.text).toContain('roll v3');
    },
    10 * 60_000,
  );

  it(
    'a deployment that never went live is 409; its failure is explained with the secrets masked',
    async () => {
      await git.addRepo('acme/broken', apps.failingDockerfile());
      const web = (await call('POST', `/api/projects/${projectId}/services`, { name: 'broken', repoFullName: 'acme/broken' })).json
        .service as { id: string };
      const secret = 'e2e-very-secret-value-0123';
      expect((await call('POST', `/api/services/${web.id}/env`, { key: 'API_TOKEN', value: secret, secret: true })).status).toBe(200);
      const failed = await deploy(call, web.id);
      expect(failed.deployment.status).toBe('failed');
      const res = await call('POST', `/api/deployments/${failed.deployment.id}/rollback`);
      expect(res.status, res.text).toBe(409);
      expect(res.json.error).toBe('conflict');
      expect((await call('GET', `/api/services/${web.id}/overview`)).json.liveDeploymentId).toBeNull();

      const openai = await new OpenAiStandin().start();
      try {
        const connected = await call('PUT', '/api/settings', {
          aiProviders: [{ providerId: 'gpt', kind: 'openai', baseUrl: openai.baseUrl, apiKey: openai.apiKey }],
        });
        expect(connected.status, connected.text).toBe(200);
        expect(connected.text).not.toContain(openai.apiKey);
        const explain = (providerId: string, model: string) =>
          call('POST', `/api/deployments/${failed.deployment.id}/explain-failure`, { providerId, model });
        const explained = await explain('gpt', 'gpt-e2e');
        expect(explained.status, explained.text).toBe(200);
        expect(explained.json).toEqual({ explanation: openai.answer });
        expect(openai.requests[0]!.body.model).toBe('gpt-e2e');
        const sent = JSON.stringify(openai.requests[0]!.body);
        expect(sent).toContain(apps.BUILD_FAILURE_MESSAGE);
        expect(sent).not.toContain(secret);
        expect((await explain('nope', 'm')).status).toBe(404);
        openai.failNext(503, 'The engine is currently overloaded, please try again later');
        const upstream = await explain('gpt', 'm');
        expect(upstream.status).toBe(502);
        expect(upstream.json.error).toBe('upstream_error');
        expect(upstream.json.message).toContain('currently overloaded');
      } finally {
        await openai.close();
      }
    },
    5 * 60_000,
  );
});
