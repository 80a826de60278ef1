import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForDeployment } from '../helpers/deployments.js';
import { httpText, ownPortRange, provisionDocker } from '../helpers/docker.js';
import { startGitServer, type GitServer } from '../helpers/git-server.js';
import { createScratchDatabase } from '../helpers/postgres.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { readSse, type SseFrame } from '../helpers/sse.js';
import { until } from '../helpers/until.js';

/*
 * Issue 31's "two platform processes on one PostgreSQL, one killed mid-deployment", end to end: two processes
 * started as `npm start` starts them, one install (one database, one SECRET_KEY, one host port range), each its
 * own data directory. The first started leads the runtime duties (the deploy runner among them). A deployment
 * asked for through the second is run by the first; a client following its log through the second sees the
 * lines the first writes. The first is then SIGKILLed in the middle of the build: the second takes the lead,
 * settles the deployment as failed with the reason (it is never left running, and never started a second
 * time), and runs the next deployment itself.
 */
let db: Awaited<ReturnType<typeof createScratchDatabase>>;
let git: GitServer;
let first: ServerProcess;
let second: ServerProcess;

/** A build that prints a numbered tick each second for a while: long enough to be killed in the middle of. */
function slowBuild(nonce: string): Record<string, string> {
  return {
    Dockerfile: [
      'FROM busybox:latest',
      `RUN for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do echo "tick $i ${nonce}"; sleep 1; done`,
      'RUN mkdir -p /www && echo served > /www/index.html',
      'CMD ["httpd", "-f", "-p", "3000", "-h", "/www"]',
      '',
    ].join('\n'),
  };
}

beforeAll(async () => {
  await provisionDocker({ images: 'busybox' });
  [db, git] = await Promise.all([createScratchDatabase(), startGitServer()]);
  const env = {
    DATABASE_URL: db.url,
    SECRET_KEY: randomBytes(24).toString('hex'),
    GIT_BASE_URL: git.url,
    HOST_PORT_RANGE: ownPortRange(),
    BUILD_CONCURRENCY: '1',
    STOP_GRACE_SECONDS: '1',
    // A process silent for 3 s is gone: its lead and its running jobs move to the other within seconds.
    CONTROL_PLANE_HEARTBEAT_MS: '500',
    CONTROL_PLANE_DEAD_AFTER_MS: '3000',
  };
  // One after the other: the first runs the migrations and takes the lead.
  first = await startServerProcess(env);
  second = await startServerProcess(env);
}, 120_000);

afterAll(async () => {
  await first?.dispose();
  await second?.dispose();
  await Promise.all([db?.drop(), git?.close()]);
}, 60_000);

describe('two platform processes on one PostgreSQL', () => {
  it('a deployment run by one is followed through the other; killed mid-build, the other settles it once and deploys next', async () => {
    const viaSecond = api(second.url, second.token);
    const nonce = randomBytes(4).toString('hex');
    await git.addRepo('cp/app', slowBuild(nonce));
    const project = (await viaSecond('POST', '/api/projects', { name: `control-planes-${nonce}` })).json.project;
    const created = await viaSecond('POST', `/api/projects/${project.id}/services`, {
      name: 'app',
      repoFullName: 'cp/app',
      internalPort: 3000,
    });
    expect(created.status, created.text).toBe(201);
    const service = created.json.service;

    const asked = await viaSecond('POST', `/api/services/${service.id}/deployments`);
    expect(asked.status, asked.text).toBe(201);
    const deploymentId = asked.json.deployment.id as string;

    // The log through the second process, while the first runs the build: the second reads the first's lines from the table.
    const seen: SseFrame[] = [];
    const followed = readSse(`${second.url}/api/deployments/${deploymentId}/stream`, {
      token: second.token,
      timeoutMs: 120_000,
      until: () => false,
      onFrame: (frame) => seen.push(frame),
    });
    const lines = () =>
      seen
        .flatMap((f) =>
          f.event === 'snapshot' ? (f.data as Array<{ line: string }>) : f.event === 'log' ? [f.data as { line: string }] : [],
        )
        .map((l) => l.line);
    await until(() => lines().some((l) => l.includes(`tick 3 ${nonce}`)), 90_000, 'tick 3 of the build through the second process', 100);
    expect(lines().some((l) => l.includes(`Deployment ${deploymentId} started`))).toBe(true);

    // The first process (the one running the build) dies without any cleanup.
    await first.kill();
    const killedAt = Date.now();

    // The second settles it: failed, with the reason, never left running and never started again.
    const settled = await waitForDeployment(viaSecond, deploymentId, 60_000);
    const settledMs = Date.now() - killedAt;
    expect(settled.deployment.status, settled.logs.join('\n')).toBe('failed');
    expect(settled.logs.join('\n')).toMatch(/The server stopped while this deployment was running/);
    expect(settled.logs.filter((l) => l.includes(`Deployment ${deploymentId} started`))).toHaveLength(1);
    // No tick of the build after the kill: the build was not resumed or re-run by the second process.
    const ticks = settled.logs.filter((l) => new RegExp(`^tick \\d+ ${nonce}$`).test(l.trim()));
    expect(new Set(ticks).size).toBe(ticks.length);

    // The stream through the second process ends with the settlement, having carried the first's lines.
    const stream = await followed;
    expect(stream.status).toBe(200);
    expect(lines().filter((l) => l.includes(`tick 1 ${nonce}`))).toHaveLength(1);

    // The second now runs the deploy runner: the next deployment goes live.
    const quick = await git.addRepo('cp/app', {
      Dockerfile: [
        'FROM busybox:latest',
        'RUN mkdir -p /www && echo second-ran-it > /www/index.html',
        'CMD ["httpd", "-f", "-p", "3000", "-h", "/www"]',
        '',
      ].join('\n'),
    });
    const next = await viaSecond('POST', `/api/services/${service.id}/deployments`);
    expect(next.status, next.text).toBe(201);
    const done = await waitForDeployment(viaSecond, next.json.deployment.id, 120_000);
    expect(done.deployment.status, done.logs.join('\n')).toBe('succeeded');
    expect(done.deployment.commitSha).toBe(quick.commitSha);
    const served = await httpText(`http://127.0.0.1:${service.hostPort}/`);
    expect(served?.text.trim()).toBe('second-ran-it');
    console.log(
      `control planes: the killed process's deployment settled as failed ${settledMs} ms after the kill; the next one ran in the survivor`,
    );
  }, 240_000);
});
