import { afterAll, beforeAll, expect, it } from 'vitest';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { containersWithLabel, httpText, provisionDocker } from '../helpers/docker.js';
import { deploy, waitForDeployment, waitForLogLine } from '../helpers/deployments.js';
import { startGitServer } from '../helpers/git-server.js';
import * as apps from '../fixtures/apps.js';

/** kill -9 of the server in the middle of a build, then a restart on the same data. */
let git: Awaited<ReturnType<typeof startGitServer>>;
const servers: ServerProcess[] = [];
const env = { BUILD_CONCURRENCY: '2', HEALTH_TIMEOUT_MS: '20000', STOP_GRACE_SECONDS: '1' };

beforeAll(async () => {
  await provisionDocker();
  git = await startGitServer();
}, 20 * 60_000);

afterAll(async () => {
  for (const server of servers.reverse()) await server.dispose();
  await git?.close();
});

it('marks the interrupted deployment failed, leaves no stray container, keeps the running service serving', async () => {
  const first = await startServerProcess({ ...env, GIT_BASE_URL: git.url });
  servers.push(first);
  const call = api(first.url, first.token);
  const project = (await call('POST', '/api/projects', { name: `restart-${Date.now()}` })).json.project;
  const live = await git.addRepo('acme/live', apps.dockerfileApp('still here'));
  const liveService = (
    await call('POST', `/api/projects/${project.id}/services`, { name: 'live', repoFullName: null, repoUrl: live.cloneUrl })
  ).json.service;
  const ok = await deploy(call, liveService.id);
  expect(ok.deployment.status, ok.logs.join('\n')).toBe('succeeded');

  const slow = await git.addRepo('acme/slow-restart', apps.slowBuild(120));
  const slowService = (
    await call('POST', `/api/projects/${project.id}/services`, { name: 'slow', repoFullName: null, repoUrl: slow.cloneUrl })
  ).json.service;
  const { deployment } = (await call('POST', `/api/services/${slowService.id}/deployments`)).json;
  await waitForLogLine(call, deployment.id, /Building image/);
  await first.kill();

  const second = await startServerProcess({ ...env, GIT_BASE_URL: git.url }, { dataDir: first.dataDir, token: first.token });
  servers.push(second);
  const again = api(second.url, second.token);
  const result = await waitForDeployment(again, deployment.id, 30_000);
  expect(result.deployment.status).toBe('failed');
  expect(result.logs.join('\n')).toMatch(/The server stopped while this deployment was running/);
  expect(await containersWithLabel(`slipway.service=${slowService.id}`)).toEqual([]);
  expect(await containersWithLabel(`slipway.service=${liveService.id}`, false)).toEqual([ok.deployment.containerName]);
  // The host port comes back once the new process points it at the container that kept running.
  let answer = null;
  for (let i = 0; i < 40 && !answer?.text.includes('still here'); i++) {
    answer = await httpText(`http://127.0.0.1:${liveService.hostPort}`, 1000);
    if (!answer?.text.includes('still here')) await new Promise((r) => setTimeout(r, 250));
  }
  expect(answer?.text).toContain('still here');
  await again('DELETE', `/api/projects/${project.id}`);
});
