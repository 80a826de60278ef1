import { execFile } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestVia, startCaddy, waitUntilServed, quietPort, type CaddyProcess } from '../helpers/caddy.js';
import { waitForDeployment, deploy } from '../helpers/deployments.js';
import { docker, ownPortRange, provisionDocker } from '../helpers/docker.js';
import {
  bitbucketDelivery,
  giteaDelivery,
  githubDelivery,
  gitlabDelivery,
  type SignedDelivery,
  standardDelivery,
  startGitHostStandins,
  type GitHostStandins,
} from '../helpers/git-host-standins.js';
import { startGitServer, type GitServer } from '../helpers/git-server.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import * as apps from '../fixtures/apps.js';

/**
 * Push to deploy end to end, over real HTTP against the built platform, real Docker and a real Caddy:
 * commits pushed to a real git server (git http-backend), deliveries signed with each provider's
 * documented algorithm and posted to the public endpoint, commit statuses received by the git hosts'
 * stand-ins, branch polling with no webhook, and a pull request's preview with a copy of the parent's
 * database, redeployed by a push and torn down (containers, volumes, routes) when it is closed.
 */
const run = promisify(execFile);
const ROOT_DOMAIN = 'apps.test';
const TOKEN = 'ghp_e2e-status-token-0123456789';
const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/webhooks');
const fixture = (name: string) => JSON.parse(readFileSync(path.join(FIXTURES, `${name}.json`), 'utf8')) as Record<string, any>;

let caddy: CaddyProcess;
let httpPort: number;
let git: GitServer;
let standins: GitHostStandins;
let server: ServerProcess;
let call: ReturnType<typeof api>;
let projectId: string;
let projectSlug: string;
let secret: string;

beforeAll(async () => {
  await provisionDocker({ images: 'busybox,debian,postgres' });
  await run('bash', ['test/provision/caddy.sh']);
  caddy = await startCaddy();
  httpPort = await quietPort();
  git = await startGitServer();
  standins = await startGitHostStandins(TOKEN);
  server = await startServerProcess({
    ...caddy.platformEnv,
    PROXY_HTTP_PORT: String(httpPort),
    ROOT_DOMAIN,
    GIT_BASE_URL: git.url,
    BUILD_CONCURRENCY: '2',
    STOP_GRACE_SECONDS: '1',
    HEALTH_TIMEOUT_MS: '60000',
    HOST_PORT_RANGE: ownPortRange(),
    HOOKS_TICK_MS: '200',
    WEBHOOK_BODY_LIMIT_BYTES: '65536',
    WEBHOOK_RATE_LIMIT_PER_MINUTE: '300',
    GITHUB_API_URL: standins.apiUrls.github,
    GITLAB_URL: standins.apiUrls.gitlab.replace(/\/api\/v4$/, ''),
    GITEA_URL: standins.apiUrls.gitea.replace(/\/api\/v1$/, ''),
    FORGEJO_URL: standins.apiUrls.forgejo.replace(/\/api\/v1$/, ''),
    BITBUCKET_API_URL: standins.apiUrls.bitbucket,
  });
  call = api(server.url, server.token);
  const project = (await call('POST', '/api/projects', { name: `push-${Date.now()}` })).json.project;
  projectId = project.id;
  projectSlug = project.slug;
  const hook = await call('POST', `/api/projects/${projectId}/webhook`);
  expect(hook.status, hook.text).toBe(200);
  secret = hook.json.webhook.secret;
}, 20 * 60_000);

afterAll(async () => {
  if (call && projectId) await call('DELETE', `/api/projects/${projectId}`).catch(() => undefined);
  await server?.dispose();
  await caddy?.stop();
  await git?.close();
  await standins?.close();
});

/** Posts a delivery to the public endpoint exactly as the sender would (no API key). */
async function deliver(delivery: SignedDelivery, id = projectId): Promise<{ status: number; json: any; text: string }> {
  const res = await fetch(`${server.url}/api/hooks/${id}`, { method: 'POST', headers: delivery.headers, body: delivery.body });
  const text = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, json, text };
}

/** GitHub's documented push payload, for a commit on the local git server. */
function githubPush(repo: string, branch: string, sha: string, message: string, files: string[] = ['www/index.html']) {
  const base = fixture('github-push');
  const repository = {
    ...base.repository,
    name: repo.split('/')[1],
    full_name: repo,
    clone_url: `${git.url}/${repo}.git`,
    html_url: `${git.url}/${repo}`,
    url: `${git.url}/${repo}`,
  };
  const commit = { ...base.head_commit, id: sha, message, modified: files, added: [], removed: [] };
  return { ...base, ref: `refs/heads/${branch}`, after: sha, repository, head_commit: commit, commits: [commit] };
}

/** GitHub's documented pull_request payload for `head` (a branch of the same repository) into `base`. */
function githubPullRequest(repo: string, action: string, number: number, head: { branch: string; sha: string }, base = 'main') {
  const fx = fixture('github-pull-request');
  const repository = {
    ...fx.repository,
    name: repo.split('/')[1],
    full_name: repo,
    clone_url: `${git.url}/${repo}.git`,
    html_url: `${git.url}/${repo}`,
  };
  return {
    ...fx,
    action,
    number,
    repository,
    pull_request: {
      ...fx.pull_request,
      number,
      merged: false,
      head: { ...fx.pull_request.head, ref: head.branch, sha: head.sha, repo: repository },
      base: { ...fx.pull_request.base, ref: base, repo: repository },
    },
  };
}

function generated(slug: string, scope = projectSlug): string {
  return `${slug}-${scope}.${ROOT_DOMAIN}`;
}

async function until<T>(what: string, check: () => Promise<T | null | undefined | false>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('push to deploy', () => {
  it(
    'a signed GitHub push deploys exactly the pushed commit, live through Caddy, with commit statuses; a replay deploys nothing',
    async () => {
      await git.addRepo('acme/push', apps.dockerfileApp('push v1'));
      const created = await call('POST', `/api/projects/${projectId}/services`, {
        name: 'push',
        repoFullName: 'acme/push',
        internalPort: 3000,
        gitToken: TOKEN,
      });
      expect(created.status, created.text).toBe(201);
      const web = created.json.service as { id: string; slug: string };
      const first = await deploy(call, web.id);
      expect(first.deployment.status, first.logs.join('\n')).toBe('succeeded');
      await waitUntilServed(httpPort, generated(web.slug), { status: 200, text: /push v1/ }, 30_000);

      const { commitSha: v2 } = await git.pushCommit('acme/push', { 'www/index.html': 'push v2\n' }, { message: 'Second version' });
      const delivery = githubDelivery('push', githubPush('acme/push', 'main', v2, 'Second version'), secret, randomUUID());
      const answer = await deliver(delivery);
      expect(answer.status, answer.text).toBe(202);
      expect(answer.json).toMatchObject({ outcome: 'deployed', deploymentIds: [expect.any(String)] });
      // The branch moves on before the build starts: the build still takes exactly the pushed commit.
      const { commitSha: v3 } = await git.pushCommit('acme/push', { 'www/index.html': 'push v3\n' }, { message: 'Third version' });
      const pushed = await waitForDeployment(call, answer.json.deploymentIds[0]);
      expect(pushed.deployment.status, pushed.logs.join('\n')).toBe('succeeded');
      expect(pushed.deployment).toMatchObject({ commitSha: v2, trigger: 'push', provider: 'github', commitMessage: 'Second version' });
      expect(pushed.logs.join('\n')).toContain(`Fetching commit ${v2}`);
      expect((await requestVia(httpPort, generated(web.slug)))?.text).toBe('push v2\n');

      const success = await standins.waitFor((s) => s.sha === v2 && s.normalized === 'success', 30_000);
      expect(success).toMatchObject({ provider: 'github', repository: 'acme/push', context: 'slipway/push' });
      expect(success.targetUrl).toContain(`/api/deployments/${pushed.deployment.id}`);
      expect(standins.statusesOf(v2).map((s) => s.normalized)[0]).toBe('pending');
      expect(standins.refusals).toEqual([]);

      const replay = await deliver(delivery);
      expect(replay.status, replay.text).toBe(200);
      expect(replay.json).toMatchObject({ outcome: 'duplicate', deploymentIds: [] });
      const deployments = (await call('GET', `/api/services/${web.id}/deployments`)).json.deployments as unknown[];
      expect(deployments).toHaveLength(2);
      expect(v3).not.toBe(v2);

      const listed = await call('GET', `/api/projects/${projectId}/webhook/deliveries`);
      expect(listed.status).toBe(200);
      expect(listed.json.deliveries.slice(0, 2).map((d: any) => [d.provider, d.outcome, d.httpStatus])).toEqual([
        ['github', 'duplicate', 200],
        ['github', 'deployed', 202],
      ]);
      expect(listed.text).not.toContain(secret);
      expect(server.output()).not.toContain(secret);
      expect(server.output()).not.toContain(TOKEN);
    },
    10 * 60_000,
  );

  it(
    'bad input over HTTP: 401 unsigned or wrong, 400 malformed, 413 too large, 202 ignored with the reason; each provider verified',
    async () => {
      const push = githubPush('acme/push', 'main', 'a'.repeat(40), 'x');
      const unsigned = githubDelivery('push', push, secret);
      delete unsigned.headers['x-hub-signature-256'];
      expect((await deliver(unsigned)).status).toBe(401);
      const wrong = await deliver(githubDelivery('push', push, `${secret}x`));
      expect(wrong.status).toBe(401);
      expect(wrong.json).toMatchObject({ error: 'unauthorized', message: expect.any(String), details: {} });
      expect(wrong.text).not.toContain(secret);
      const body = '{"ref": ';
      const malformed = {
        body,
        headers: {
          ...githubDelivery('push', {}, secret).headers,
          'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
        },
      };
      expect((await deliver(malformed)).status).toBe(400);
      const large = githubDelivery('push', { ...push, padding: 'x'.repeat(70_000) }, secret);
      const tooLarge = await deliver(large);
      expect(tooLarge.status).toBe(413);
      expect(tooLarge.json.error).toBe('payload_too_large');
      const star = await deliver(githubDelivery('star', { action: 'created' }, secret));
      expect(star.status).toBe(202);
      expect(star.json.outcome).toBe('ignored');
      const otherBranch = await deliver(githubDelivery('push', { ...push, ref: 'refs/heads/elsewhere' }, secret));
      expect(otherBranch.status).toBe(202);
      expect(otherBranch.json.reason).toContain('elsewhere');
      const nobody = await deliver(githubDelivery('push', githubPush('acme/nobody', 'main', 'a'.repeat(40), 'x'), secret));
      expect(nobody.status).toBe(202);
      expect(nobody.json.reason).toContain('No service');
      expect((await deliver(githubDelivery('push', push, secret), 'x'.repeat(32))).status).toBe(404);
      const get = await fetch(`${server.url}/api/hooks/${projectId}`);
      expect(get.status).toBe(405);

      // Each provider's own signature over the raw body, through the same URL: verified (202, another branch), or refused when tampered.
      const gitlab = fixture('gitlab-push');
      const gitea = fixture('gitea-push');
      const bitbucket = fixture('bitbucket-push');
      const generic = { type: 'push', data: { repository: `${git.url}/acme/push.git`, branch: 'elsewhere', sha: 'b'.repeat(40) } };
      const signed: Array<[string, SignedDelivery]> = [
        ['gitlab', gitlabDelivery('Push Hook', gitlab, secret)],
        ['gitea', giteaDelivery('gitea', 'push', gitea, secret)],
        ['forgejo', giteaDelivery('forgejo', 'push', gitea, secret)],
        ['bitbucket', bitbucketDelivery('repo:push', bitbucket, secret)],
        ['generic', standardDelivery(generic, secret)],
      ];
      for (const [provider, delivery] of signed) {
        const ok = await deliver(delivery);
        expect(ok.status, `${provider}: ${ok.text}`).toBe(202);
        expect(ok.json.outcome, provider).toBe('ignored');
        // GitLab sends its secret token as is (it signs nothing): a wrong token is its forgery; the others sign the body.
        const forged =
          provider === 'gitlab'
            ? { ...delivery, headers: { ...delivery.headers, 'x-gitlab-token': `${secret}x`, 'x-gitlab-event-uuid': randomUUID() } }
            : { ...delivery, body: delivery.body.replace('{', '{ ') };
        const tampered = await deliver(forged);
        expect(tampered.status, `${provider} tampered: ${tampered.text}`).toBe(401);
      }
      const stale = await deliver(standardDelivery(generic, secret, { timestamp: Math.floor(Date.now() / 1000) - 6 * 60 }));
      expect(stale.status).toBe(401);

      const listed = (await call('GET', `/api/projects/${projectId}/webhook/deliveries`)).json.deliveries as any[];
      const providers = new Set(listed.map((d) => d.provider));
      for (const p of ['github', 'gitlab', 'gitea', 'forgejo', 'bitbucket', 'generic']) expect(providers.has(p), p).toBe(true);
      expect(listed.some((d) => d.httpStatus === 413 && d.outcome === 'refused')).toBe(true);
      expect(JSON.stringify(listed)).not.toContain(secret);
    },
    5 * 60_000,
  );

  it(
    'branch polling deploys a new commit with no webhook',
    async () => {
      await git.addRepo('acme/poll', apps.dockerfileApp('poll v1'));
      const created = await call('POST', `/api/projects/${projectId}/services`, {
        name: 'poll',
        repoFullName: 'acme/poll',
        internalPort: 3000,
      });
      const web = created.json.service as { id: string; slug: string };
      const first = await deploy(call, web.id);
      expect(first.deployment.status, first.logs.join('\n')).toBe('succeeded');
      const patched = await call('PATCH', `/api/services/${web.id}`, { pollIntervalSeconds: 30 });
      expect(patched.status, patched.text).toBe(200);
      const { commitSha: v2 } = await git.pushCommit('acme/poll', { 'www/index.html': 'poll v2\n' });
      const polled = await until(
        'a poll deployment',
        async () => {
          const list = (await call('GET', `/api/services/${web.id}/deployments`)).json.deployments as any[];
          return list.find((d) => d.trigger === 'poll');
        },
        90_000,
      );
      expect(polled).toMatchObject({ commitSha: v2, provider: 'git' });
      const done = await waitForDeployment(call, polled.id);
      expect(done.deployment.status, done.logs.join('\n')).toBe('succeeded');
      await waitUntilServed(httpPort, generated(web.slug), { status: 200, text: /poll v2/ }, 30_000);
      const service = (await call('GET', `/api/services/${web.id}/overview`)).json.service;
      expect(service.poll).toMatchObject({ lastSeen: v2, failures: 0, lastError: null });
      await call('PATCH', `/api/services/${web.id}`, { pollIntervalSeconds: null });
    },
    5 * 60_000,
  );
});

describe('pull-request previews', () => {
  it(
    'a PR gets pr-<n> with a copy of the database holding the parent rows; a push redeploys it; closing leaves nothing',
    async () => {
      const db = (
        await call('POST', `/api/projects/${projectId}/services`, {
          name: 'ledger',
          repoUrl: 'database',
          repoFullName: 'database:postgres',
          branch: 'main',
        })
      ).json.service as { id: string; slug: string };
      const dbDeployed = await deploy(call, db.id, 5 * 60_000);
      expect(dbDeployed.deployment.status, dbDeployed.logs.join('\n')).toBe('succeeded');
      const sql = async (serviceId: string, statement: string) => {
        const res = await call('POST', `/api/services/${serviceId}/database/query`, { sql: statement });
        expect(res.status, `${statement}: ${res.text}`).toBe(200);
        return res.json.rows as Array<Record<string, unknown>>;
      };
      await sql(db.id, 'CREATE TABLE ledger (id int primary key, name text)');
      await sql(db.id, "INSERT INTO ledger VALUES (1, 'parent row one'), (2, 'parent row two')");

      await git.addRepo('acme/app', apps.dockerfileApp('app main'));
      const web = (
        await call('POST', `/api/projects/${projectId}/services`, {
          name: 'app',
          repoFullName: 'acme/app',
          internalPort: 3000,
          gitToken: TOKEN,
        })
      ).json.service as { id: string; slug: string };
      expect(
        (await call('POST', `/api/services/${web.id}/env`, { key: 'DB_PASSWORD', value: `\${${db.slug}.POSTGRES_PASSWORD}` })).status,
      ).toBe(200);
      const patched = await call('PATCH', `/api/services/${web.id}`, {
        previews: { enabled: true, databases: 'copy', env: [{ key: 'PREVIEW', value: 'true' }] },
      });
      expect(patched.status, patched.text).toBe(200);
      const main = await deploy(call, web.id);
      expect(main.deployment.status, main.logs.join('\n')).toBe('succeeded');

      const { commitSha: head1 } = await git.pushCommit(
        'acme/app',
        { 'www/index.html': 'app pr one\n' },
        { branch: 'feature', message: 'PR work' },
      );
      const opened = await deliver(
        githubDelivery('pull_request', githubPullRequest('acme/app', 'opened', 7, { branch: 'feature', sha: head1 }), secret),
      );
      expect(opened.status, opened.text).toBe(202);
      expect(opened.json).toMatchObject({ outcome: 'deployed', previewIds: [expect.any(String)] });
      const ready = await until(
        'the preview ready',
        async () => {
          const previews = (await call('GET', `/api/projects/${projectId}/previews`)).json.previews as any[];
          const preview = previews.find((p) => p.number === 7);
          if (preview?.status === 'failed') throw new Error(`preview failed: ${preview.statusReason}`);
          return preview?.status === 'ready' ? preview : null;
        },
        5 * 60_000,
      );
      expect(ready).toMatchObject({ headSha: head1, headBranch: 'feature', fromFork: false });
      const previewDb = ready.databases.find((d: any) => d.parentServiceId === db.id);
      expect(previewDb).toMatchObject({ mode: 'copy', previewServiceId: expect.any(String), filledFrom: 'a fresh dump' });
      expect(await sql(previewDb.previewServiceId, 'SELECT id, name FROM ledger ORDER BY id')).toEqual([
        { id: 1, name: 'parent row one' },
        { id: 2, name: 'parent row two' },
      ]);
      // Its own database: a row written there is not in the parent's.
      await sql(previewDb.previewServiceId, "INSERT INTO ledger VALUES (3, 'preview only')");
      expect((await sql(db.id, 'SELECT count(*)::int AS n FROM ledger'))[0]).toEqual({ n: 2 });
      const host = new URL(ready.url).hostname;
      await waitUntilServed(httpPort, host, { status: 200, text: /app pr one/ }, 30_000);
      expect((await requestVia(httpPort, generated(web.slug)))?.text).toBe('app main\n');
      await standins.waitFor((s) => s.sha === head1 && s.context === 'slipway/app/preview' && s.normalized === 'success', 60_000);

      const { commitSha: head2 } = await git.pushCommit('acme/app', { 'www/index.html': 'app pr two\n' }, { branch: 'feature' });
      const synced = await deliver(
        githubDelivery('pull_request', githubPullRequest('acme/app', 'synchronize', 7, { branch: 'feature', sha: head2 }), secret),
      );
      expect(synced.status, synced.text).toBe(202);
      expect(synced.json.deploymentIds).toHaveLength(1);
      const redeployed = await waitForDeployment(call, synced.json.deploymentIds[0]);
      expect(redeployed.deployment).toMatchObject({ status: 'succeeded', commitSha: head2 });
      await waitUntilServed(httpPort, host, { status: 200, text: /app pr two/ }, 30_000);
      // The copy kept its rows across the redeploy.
      expect((await sql(previewDb.previewServiceId, 'SELECT count(*)::int AS n FROM ledger'))[0]).toEqual({ n: 3 });

      const environmentId = ready.environmentId as string;
      const previewServiceIds = [...ready.services.map((s: any) => s.previewServiceId), previewDb.previewServiceId].filter(
        Boolean,
      ) as string[];
      const closedPr = githubPullRequest('acme/app', 'closed', 7, { branch: 'feature', sha: head2 });
      const closed = await deliver(githubDelivery('pull_request', closedPr, secret));
      expect(closed.status, closed.text).toBe(202);
      expect(closed.json.reason).toContain('torn down');
      expect((await call('GET', `/api/projects/${projectId}/previews`)).json.previews).toEqual([]);
      const environments = (await call('GET', `/api/projects/${projectId}/environments`)).json.environments as any[];
      expect(environments.map((e) => e.name)).toEqual(['production']);
      expect(await docker('ps', '-a', '-q', '--filter', `label=slipway.environment=${environmentId}`)).toBe('');
      for (const id of previewServiceIds) {
        expect(await docker('ps', '-a', '-q', '--filter', `label=slipway.service=${id}`), id).toBe('');
        expect(await docker('volume', 'ls', '-q', '--filter', `name=slipway-${id}`), id).toBe('');
        expect(await docker('images', '-q', `slipway-${id}-*`), id).toBe('');
      }
      expect(await docker('network', 'ls', '-q', '--filter', `name=slipway-${environmentId}`)).toBe('');
      await waitUntilServed(httpPort, host, { status: 404 }, 15_000);
      // The parent and its database are untouched.
      expect((await requestVia(httpPort, generated(web.slug)))?.text).toBe('app main\n');
      expect((await sql(db.id, 'SELECT count(*)::int AS n FROM ledger'))[0]).toEqual({ n: 2 });
    },
    12 * 60_000,
  );
});

// Last in the file: once an address is limited, every delivery from it is refused for the rest of the minute.
describe('the public endpoint', () => {
  it('is rate-limited per address', async () => {
    let limited: Response | null = null;
    for (let i = 0; i < 320 && !limited; i++) {
      const res = await fetch(`${server.url}/api/hooks/${projectId}`, {
        method: 'POST',
        body: '{}',
        headers: { 'content-type': 'application/json' },
      });
      await res.text();
      if (res.status === 429) limited = res;
    }
    expect(limited, 'no 429 within 320 deliveries at 300 a minute').not.toBeNull();
    expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThan(0);
  }, 60_000);
});
