import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BitbucketProvider } from '../../adapters/git/bitbucket.git-provider.js';
import { DockerHubProvider } from '../../adapters/git/dockerhub.git-provider.js';
import { GiteaProvider } from '../../adapters/git/gitea.git-provider.js';
import { GitHubProvider, GitHubStatusApi } from '../../adapters/git/github.git-provider.js';
import { GitLabProvider } from '../../adapters/git/gitlab.git-provider.js';
import { StandardWebhooksProvider } from '../../adapters/git/standard-webhooks.git-provider.js';
import type { HookRequest } from '../../src/git-hooks/hook-event.js';
import { errorOf } from '../helpers/caller-errors.js';
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
import { createHarness, type Harness } from '../helpers/harness.js';

/**
 * The project webhook through createCaller (make, rotate, read, deliveries, previews) and deliveries
 * through the receiver the public endpoint calls: each provider's documented example payload, signed with
 * its documented algorithm; every bad input answered as the issue says, and recorded.
 */

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/webhooks');
const fixture = (name: string) => JSON.parse(readFileSync(path.join(FIXTURES, `${name}.json`), 'utf8')) as Record<string, unknown>;
const REPO = 'https://github.com/Codertocat/Hello-World.git';
const PUSHED = 'a10867b14bb761a232cd80139fbd4c0d33264240';
const TOKEN = 'ghp_status-token-123456';

let h: Harness;
let standins: GitHostStandins;
beforeEach(async () => {
  standins = await startGitHostStandins(TOKEN);
  h = await createHarness({
    config: {
      rootDomain: 'apps.test',
      hooks: {
        publicUrl: 'https://slipway.example.com',
        maxBodyBytes: 64 * 1024,
        perAddressPerMinute: 1000,
        tickMs: 100,
        apiUrls: { ...standins.apiUrls },
        previewCopyMaxBytes: 5 * 1024 ** 3,
        previewDiskMaxUsedRatio: 0.9,
      },
    },
    hooks: {
      providers: [
        new GiteaProvider('forgejo'),
        new GiteaProvider('gitea'),
        new GitLabProvider(),
        new BitbucketProvider(),
        new GitHubProvider(),
        new StandardWebhooksProvider(),
        new DockerHubProvider(),
      ],
      statusApis: [new GitHubStatusApi()],
    },
  });
});
afterEach(async () => {
  await h.services.statuses.stop();
  await h?.services.poller.stop();
  await h?.services.previews.stop();
  await h.close();
  await standins.close();
});

function request(delivery: SignedDelivery): HookRequest {
  return {
    headers: Object.fromEntries(Object.entries(delivery.headers).map(([k, v]) => [k.toLowerCase(), v])),
    body: Buffer.from(delivery.body),
    receivedAt: new Date(),
  };
}

async function projectWithService(fields: Record<string, unknown> = {}) {
  const api = h.caller();
  const { project } = await api.projects.create({ name: 'Hello' });
  const { service } = await api.services.create({ projectId: project.id, name: 'web', repoFullName: null, repoUrl: REPO, ...fields });
  const { webhook } = await api.webhooks.createOrRotate({ projectId: project.id });
  return { api, project, service, secret: webhook.secret };
}

describe('the project webhook through the router', () => {
  it('makes the webhook with its secret shown once, shows it without the secret, rotates it', async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'Hello' });
    expect(await errorOf(api.webhooks.get({ projectId: project.id }))).toMatchObject({ code: 'NOT_FOUND', error: 'not_found' });
    const first = (await api.webhooks.createOrRotate({ projectId: project.id })).webhook;
    expect(first).toEqual({
      url: `https://slipway.example.com/api/hooks/${project.id}`,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      createdAt: expect.any(String),
      rotatedAt: expect.any(String),
    });
    const shown = (await api.webhooks.get({ projectId: project.id })).webhook;
    expect(shown).toEqual({ url: first.url, createdAt: first.createdAt, rotatedAt: first.rotatedAt });
    expect(JSON.stringify(shown)).not.toContain(first.secret);
    const second = (await api.webhooks.createOrRotate({ projectId: project.id })).webhook;
    expect(second.secret).not.toBe(first.secret);
    expect(second.createdAt).toBe(first.createdAt);
    // Stored sealed: the secret is nowhere in the row.
    const row = await h.database.store.gitHooks.getWebhook(project.id);
    expect(row!.secretEncrypted).not.toContain(second.secret);
    expect(h.secrets.decrypt(row!.secretEncrypted)).toBe(second.secret);
    // The old secret stops verifying at once.
    const old = await h.services.deliveries.receive(project.id, request(githubDelivery('ping', { zen: 'x', hook_id: 1 }, first.secret)));
    expect(old.status).toBe(401);
    const fresh = await h.services.deliveries.receive(project.id, request(githubDelivery('ping', { zen: 'x', hook_id: 1 }, second.secret)));
    expect(fresh).toMatchObject({ status: 200, body: { outcome: 'ignored' } });
  });

  it('refuses a read key making the webhook, another project key, unknown fields and bad ids', async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'Hello' });
    const { project: other } = await api.projects.create({ name: 'Other' });
    await api.webhooks.createOrRotate({ projectId: project.id });
    const reader = h.caller(await h.mintKey('read'));
    expect(await errorOf(reader.webhooks.createOrRotate({ projectId: project.id }))).toMatchObject({ code: 'FORBIDDEN' });
    expect((await reader.webhooks.get({ projectId: project.id })).webhook.url).toContain(project.id);
    expect((await reader.webhooks.deliveries({ projectId: project.id })).deliveries).toEqual([]);
    const scoped = h.caller(await h.mintKey('write', [other.id]));
    expect(await errorOf(scoped.webhooks.get({ projectId: project.id }))).toMatchObject({ code: 'NOT_FOUND' });
    expect(await errorOf(scoped.webhooks.createOrRotate({ projectId: project.id }))).toMatchObject({ code: 'NOT_FOUND' });
    expect(await errorOf(scoped.webhooks.previews({ projectId: project.id }))).toMatchObject({ code: 'NOT_FOUND' });
    expect(
      await errorOf(api.webhooks.createOrRotate({ projectId: project.id, secret: 'mine' } as unknown as { projectId: string })),
    ).toMatchObject({ error: 'validation_error', field: 'secret' });
    expect(await errorOf(api.webhooks.get({ projectId: 'x'.repeat(300) }))).toMatchObject({ error: 'validation_error' });
  });

  it('validates the service fields: autoDeploy, watchPaths, pollIntervalSeconds, cancelInProgress, previews', async () => {
    const { api, project, service } = await projectWithService();
    expect(service).toMatchObject({ autoDeploy: true, watchPaths: [], pollIntervalSeconds: null, cancelInProgress: false, poll: null });
    const updated = await api.services.update({
      serviceId: service.id,
      watchPaths: ['apps/web/**', '!**/*.md'],
      pollIntervalSeconds: 60,
      cancelInProgress: true,
      previews: { enabled: true, maxOpen: 2, databases: 'empty', env: [{ key: 'PREVIEW', value: 'true' }] },
    });
    expect(updated.service).toMatchObject({
      watchPaths: ['apps/web/**', '!**/*.md'],
      pollIntervalSeconds: 60,
      cancelInProgress: true,
      previews: { enabled: true, maxOpen: 2, fromForks: false, ttlHours: null, databases: 'empty' },
    });
    expect(await errorOf(api.services.update({ serviceId: service.id, pollIntervalSeconds: 10 }))).toMatchObject({
      error: 'validation_error',
      field: 'pollIntervalSeconds',
    });
    expect(await errorOf(api.services.update({ serviceId: service.id, previews: { maxOpen: 0 } }))).toMatchObject({
      error: 'validation_error',
    });
    expect(await errorOf(api.services.update({ serviceId: service.id, watchPaths: [''] }))).toMatchObject({ error: 'validation_error' });
    const { service: db } = await api.services.create({
      projectId: project.id,
      name: 'db',
      repoUrl: 'database',
      repoFullName: 'database:postgres',
    });
    expect(db).toMatchObject({ autoDeploy: false });
    expect(await errorOf(api.services.update({ serviceId: db.id, autoDeploy: true }))).toMatchObject({ field: 'autoDeploy' });
  });
});

describe('deliveries', () => {
  it('a GitHub push deploys exactly the pushed commit, records the delivery, and a replay is a duplicate', async () => {
    const { api, project, service, secret } = await projectWithService();
    const delivery = githubDelivery('push', fixture('github-push'), secret, 'delivery-1');
    const answer = await h.services.deliveries.receive(project.id, request(delivery));
    expect(answer).toMatchObject({
      status: 202,
      body: { outcome: 'deployed', deliveryId: 'delivery-1', deploymentIds: [expect.any(String)] },
    });
    const deploymentId = (answer as { body: { deploymentIds: string[] } }).body.deploymentIds[0]!;
    const { deployment } = await api.deployments.get({ deploymentId });
    expect(deployment).toMatchObject({
      serviceId: service.id,
      trigger: 'push',
      status: 'queued',
      commitSha: PUSHED,
      commitMessage: 'Update README.md',
      commitAuthor: 'Codertocat',
      provider: 'github',
      deliveryId: 'delivery-1',
    });

    const replay = await h.services.deliveries.receive(project.id, request(delivery));
    expect(replay).toMatchObject({ status: 200, body: { outcome: 'duplicate', deploymentIds: [] } });
    expect((await api.deployments.list({ serviceId: service.id })).deployments).toHaveLength(1);

    const { deliveries } = await api.webhooks.deliveries({ projectId: project.id });
    expect(deliveries.map((d) => [d.provider, d.event, d.deliveryId, d.outcome, d.httpStatus])).toEqual([
      ['github', 'push', 'delivery-1', 'duplicate', 200],
      ['github', 'push', 'delivery-1', 'deployed', 202],
    ]);
    expect(deliveries[1]!.deploymentIds).toEqual([deploymentId]);
    expect(JSON.stringify(deliveries)).not.toContain(secret);

    // Each delivery is a write through its own door of the audit log: anonymous (the signature vouches
    // for it), the deployment it made as a target, the sender's address, no secret and no body.
    const hooked = await h.services.deliveries.receive(
      project.id,
      request(githubDelivery('push', fixture('github-push'), 'whsec_wrong')),
      '203.0.113.9',
    );
    expect(hooked).toMatchObject({ status: 401 });
    const { entries } = await api.audit.list({ projectId: project.id, operation: 'hooks.github' });
    expect(entries.map((e) => [e.door, e.actor.kind, e.outcome])).toEqual([
      ['git-webhook', 'anonymous', 'unauthorized'],
      ['git-webhook', 'anonymous', 'success'],
      ['git-webhook', 'anonymous', 'success'],
    ]);
    expect(entries[0]!.clientAddress).toBe('203.0.113.9');
    expect(entries[2]!.targetIds).toEqual([project.id, deploymentId]);
    expect(JSON.stringify(entries)).not.toContain(secret);
    expect(JSON.stringify(entries)).not.toContain(PUSHED);
  });

  it('answers bad input as the issue says, each leaving only its delivery record', async () => {
    const { api, project, service, secret } = await projectWithService();
    const receive = (d: SignedDelivery) => h.services.deliveries.receive(project.id, request(d));
    const push = fixture('github-push');
    // Unsigned, and a wrong signature: 401.
    const unsigned = githubDelivery('push', push, secret);
    delete unsigned.headers['X-Hub-Signature-256'];
    delete unsigned.headers['x-hub-signature-256'];
    expect(await receive(unsigned)).toMatchObject({ status: 401, error: { code: 'unauthorized' } });
    expect(await receive(githubDelivery('push', push, 'whsec_wrong'))).toMatchObject({ status: 401 });
    expect(await receive({ headers: { 'content-type': 'application/json' }, body: '{}' })).toMatchObject({ status: 401 });
    // An unknown event: 202 ignored.
    expect(await receive(githubDelivery('star', { action: 'created' }, secret))).toMatchObject({
      status: 202,
      body: { outcome: 'ignored' },
    });
    // Another branch: 202 ignored with the reason.
    const other = await receive(githubDelivery('push', { ...push, ref: 'refs/heads/feature' }, secret));
    expect(other).toMatchObject({ status: 202, body: { outcome: 'ignored', reason: expect.stringContaining('feature') } });
    // Malformed JSON: 400.
    const broken = githubDelivery('push', push, secret);
    const malformed = { headers: broken.headers, body: '{"ref": ' };
    const { createHmac } = await import('node:crypto');
    malformed.headers = {
      ...broken.headers,
      'X-Hub-Signature-256': `sha256=${createHmac('sha256', secret).update(malformed.body).digest('hex')}`,
    };
    expect(await receive(malformed)).toMatchObject({ status: 400, error: { code: 'validation_error' } });
    // A repository no service uses: 202 ignored.
    const elsewhere = {
      ...push,
      repository: {
        ...(push.repository as object),
        full_name: 'someone/else',
        clone_url: 'https://github.com/someone/else.git',
        html_url: 'https://github.com/someone/else',
        ssh_url: 'git@github.com:someone/else.git',
        git_url: 'git://github.com/someone/else.git',
        url: 'https://github.com/someone/else',
        name: 'else',
      },
    };
    expect(await receive(githubDelivery('push', elsewhere, secret))).toMatchObject({
      status: 202,
      body: { outcome: 'ignored', reason: expect.stringContaining('No service') },
    });
    // An unknown project: 404.
    expect(await h.services.deliveries.receive('p'.repeat(32), request(githubDelivery('push', push, secret)))).toMatchObject({
      status: 404,
    });
    // Too large (the endpoint decides by the bytes; the receiver records it).
    expect(
      await h.services.deliveries.refuseTooLarge(project.id, { headers: { 'x-github-event': 'push' }, receivedAt: new Date() }, 1024),
    ).toMatchObject({
      status: 413,
      error: { code: 'payload_too_large' },
    });

    expect((await api.deployments.list({ serviceId: service.id })).deployments).toEqual([]);
    const { deliveries } = await api.webhooks.deliveries({ projectId: project.id });
    expect(deliveries.map((d) => [d.outcome, d.httpStatus]).reverse()).toEqual([
      ['refused', 401],
      ['refused', 401],
      ['refused', 401],
      ['ignored', 202],
      ['ignored', 202],
      ['refused', 400],
      ['ignored', 202],
      ['refused', 413],
    ]);
    expect(JSON.stringify(deliveries)).not.toContain(secret);
    const audited = await api.audit.list({ projectId: project.id });
    expect(
      audited.entries
        .filter((e) => e.door === 'git-webhook')
        .map((e) => e.outcome)
        .reverse(),
    ).toEqual(['unauthorized', 'unauthorized', 'unauthorized', 'success', 'success', 'validation_error', 'success', 'payload_too_large']);
  });

  it('one webhook for a monorepo: each service whose watchPaths match deploys; none matching is recorded with the reason', async () => {
    const { api, project, service, secret } = await projectWithService({ watchPaths: ['apps/web/**'] });
    const { service: docs } = await api.services.create({
      projectId: project.id,
      name: 'docs',
      repoFullName: null,
      repoUrl: REPO,
      watchPaths: ['*.md'],
    });
    const { service: off } = await api.services.create({
      projectId: project.id,
      name: 'off',
      repoFullName: null,
      repoUrl: REPO,
      autoDeploy: false,
    });
    const answer = await h.services.deliveries.receive(project.id, request(githubDelivery('push', fixture('github-push'), secret)));
    expect(answer).toMatchObject({ status: 202, body: { outcome: 'deployed', deploymentIds: [expect.any(String)] } });
    expect((await api.deployments.list({ serviceId: docs.id })).deployments).toHaveLength(1);
    expect((await api.deployments.list({ serviceId: service.id })).deployments).toHaveLength(0);
    expect((await api.deployments.list({ serviceId: off.id })).deployments).toHaveLength(0);
    await api.services.update({ serviceId: docs.id, watchPaths: ['docs/**'] });
    const none = await h.services.deliveries.receive(project.id, request(githubDelivery('push', fixture('github-push'), secret)));
    expect(none).toMatchObject({ status: 202, body: { outcome: 'ignored', reason: expect.stringContaining('changed no path') } });
  });

  it('a newer push supersedes the queued deployment of an older one (recorded, never run)', async () => {
    const { api, project, service, secret } = await projectWithService();
    const push = fixture('github-push');
    const first = await h.services.deliveries.receive(project.id, request(githubDelivery('push', push, secret)));
    const newer = 'b'.repeat(40);
    const second = await h.services.deliveries.receive(
      project.id,
      request(githubDelivery('push', { ...push, after: newer, head_commit: { ...(push.head_commit as object), id: newer } }, secret)),
    );
    const [firstId] = (first as { body: { deploymentIds: string[] } }).body.deploymentIds;
    const [secondId] = (second as { body: { deploymentIds: string[] } }).body.deploymentIds;
    expect((await api.deployments.get({ deploymentId: firstId! })).deployment.status).toBe('superseded');
    expect((await api.deployments.get({ deploymentId: secondId! })).deployment).toMatchObject({ status: 'queued', commitSha: newer });
    const { logs } = await api.deployments.logs({ deploymentId: firstId! });
    expect(logs.map((l) => l.line).join('\n')).toContain(`Superseded by deployment ${secondId}`);
    // A manual deployment is never superseded by a push.
    const manual = (await api.deployments.create({ serviceId: service.id })).deployment;
    await h.services.deliveries.receive(project.id, request(githubDelivery('push', push, secret)));
    expect((await api.deployments.get({ deploymentId: manual.id })).deployment.status).toBe('queued');
  });

  it('each provider: GitLab, Gitea, Forgejo, Bitbucket and the Standard Webhooks hook deploy from their documented payloads', async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'Hosts' });
    const secret = (await api.webhooks.createOrRotate({ projectId: project.id })).webhook.secret;
    const receive = (d: SignedDelivery) => h.services.deliveries.receive(project.id, request(d));
    const urlOf = (payload: Record<string, unknown>, pick: (p: Record<string, unknown>) => unknown) => String(pick(payload));

    const gitlab = fixture('gitlab-push');
    await api.services.create({
      projectId: project.id,
      name: 'gl',
      repoFullName: null,
      repoUrl: urlOf(gitlab, (p) => (p.project as Record<string, unknown>).git_http_url),
      branch: String(gitlab.ref).replace('refs/heads/', ''),
    });
    expect(await receive(gitlabDelivery('Push Hook', gitlab, secret))).toMatchObject({ status: 202, body: { outcome: 'deployed' } });

    const gitea = fixture('gitea-push');
    await api.services.create({
      projectId: project.id,
      name: 'gt',
      repoFullName: null,
      repoUrl: urlOf(gitea, (p) => (p.repository as Record<string, unknown>).clone_url),
      branch: String(gitea.ref).replace('refs/heads/', ''),
    });
    expect(await receive(giteaDelivery('gitea', 'push', gitea, secret))).toMatchObject({ status: 202, body: { outcome: 'deployed' } });
    // Forgejo: the same payload under its own headers; its delivery id differs, so it is no replay.
    expect(await receive(giteaDelivery('forgejo', 'push', gitea, secret))).toMatchObject({ status: 202, body: { outcome: 'deployed' } });

    const bitbucket = fixture('bitbucket-push');
    const bbRepo = bitbucket.repository as Record<string, unknown>;
    const change = ((bitbucket.push as Record<string, unknown>).changes as Array<Record<string, unknown>>)[0]!;
    await api.services.create({
      projectId: project.id,
      name: 'bb',
      repoFullName: null,
      repoUrl: `https://bitbucket.org/${String(bbRepo.full_name)}.git`,
      branch: String((change.new as Record<string, unknown>).name),
    });
    expect(await receive(bitbucketDelivery('repo:push', bitbucket, secret))).toMatchObject({ status: 202, body: { outcome: 'deployed' } });

    await api.services.create({ projectId: project.id, name: 'ci', repoFullName: null, repoUrl: 'https://git.example.org/team/app.git' });
    const generic = {
      type: 'push',
      data: { repository: 'https://git.example.org/team/app.git', branch: 'main', sha: 'c'.repeat(40), message: 'From CI' },
    };
    expect(await receive(standardDelivery(generic, secret))).toMatchObject({ status: 202, body: { outcome: 'deployed' } });
    // Outside the 5-minute tolerance: 401.
    expect(await receive(standardDelivery(generic, secret, { timestamp: Math.floor(Date.now() / 1000) - 301 }))).toMatchObject({
      status: 401,
    });
    const { deliveries } = await api.webhooks.deliveries({ projectId: project.id });
    expect(deliveries.map((d) => d.provider).reverse()).toEqual(['gitlab', 'gitea', 'forgejo', 'bitbucket', 'generic', 'generic']);
  });

  it('posts commit statuses through the host API stand-in where the service has a token', async () => {
    const { api, project, service, secret } = await projectWithService({ gitToken: TOKEN });
    h.services.statuses.start();
    h.services.poller.start();
    h.services.previews.start();
    const answer = await h.services.deliveries.receive(project.id, request(githubDelivery('push', fixture('github-push'), secret)));
    const [deploymentId] = (answer as { body: { deploymentIds: string[] } }).body.deploymentIds;
    const pending = await standins.waitFor((s) => s.sha === PUSHED && s.state === 'pending', 20_000);
    expect(pending).toMatchObject({
      provider: 'github',
      repository: 'Codertocat/Hello-World',
      context: 'slipway/web',
      targetUrl: `https://slipway.example.com/api/deployments/${deploymentId}`,
    });
    await h.database.store.deployments.update(deploymentId!, { status: 'failed', finishedAt: new Date() });
    await standins.waitFor((s) => s.sha === PUSHED && s.state === 'failure', 20_000);
    expect(standins.refusals).toEqual([]);
    expect(JSON.stringify(standins.statuses)).not.toContain(TOKEN);
    expect((await api.deployments.get({ deploymentId: deploymentId! })).deployment.serviceId).toBe(service.id);
  });
});

describe('pull-request previews', () => {
  it('opens pr-<n> with the referenced siblings on a PR, redeploys on a push to it, tears it down on close', async () => {
    const { api, project, service, secret } = await projectWithService();
    const { service: worker } = await api.services.create({
      projectId: project.id,
      name: 'worker',
      repoUrl: 'container-image',
      containerImage: 'busybox:1',
    });
    await api.services.create({ projectId: project.id, name: 'unrelated', repoUrl: 'container-image', containerImage: 'busybox:1' });
    await api.env.set({ serviceId: worker.id, key: 'PORT', value: '9000' });
    await api.env.set({ serviceId: service.id, key: 'WORKER_PORT', value: '${worker.PORT}' });
    await api.services.update({ serviceId: service.id, previews: { enabled: true, env: [{ key: 'PREVIEW', value: 'true' }] } });
    const pr = fixture('github-pull-request');
    const opened = await h.services.deliveries.receive(project.id, request(githubDelivery('pull_request', pr, secret)));
    expect(opened).toMatchObject({ status: 202, body: { outcome: 'deployed', previewIds: [expect.any(String)] } });
    const { previews } = await api.webhooks.previews({ projectId: project.id });
    expect(previews).toHaveLength(1);
    const preview = previews[0]!;
    expect(preview).toMatchObject({
      number: 2,
      provider: 'github',
      status: 'deploying',
      headBranch: 'changes',
      headSha: 'ec26c3e57ca3a959ca5aad62de7213c562f8c821',
      fromFork: false,
    });
    expect(preview.url).toMatch(/^https?:\/\/.+apps\.test/);
    const { environments } = await api.environments.list({ projectId: project.id });
    expect(environments.map((e) => e.name).sort()).toEqual(['pr-2', 'production']);
    const copy = preview.services.find((s) => s.role === 'previewed')!;
    const copyDeployments = (await api.deployments.list({ serviceId: copy.previewServiceId! })).deployments;
    expect(copyDeployments[0]).toMatchObject({
      trigger: 'preview',
      commitSha: 'ec26c3e57ca3a959ca5aad62de7213c562f8c821',
      previewId: preview.id,
    });
    const vars = await h.envValues(copy.previewServiceId!);
    expect(vars).toMatchObject({ PREVIEW: 'true', PR_NUMBER: '2', PR_BRANCH: 'changes', PREVIEW_URL: preview.url });
    // The referenced sibling came along; the unrelated service did not.
    expect(preview.services.map((s) => [s.parentServiceId, s.role])).toEqual([
      [service.id, 'previewed'],
      [worker.id, 'sibling'],
    ]);

    const newer = 'd'.repeat(40);
    const synced = {
      ...pr,
      action: 'synchronize',
      pull_request: {
        ...(pr.pull_request as object),
        head: { ...((pr.pull_request as Record<string, unknown>).head as object), sha: newer },
      },
    };
    const sync = await h.services.deliveries.receive(project.id, request(githubDelivery('pull_request', synced, secret)));
    expect(sync).toMatchObject({ status: 202, body: { outcome: 'deployed', reason: expect.stringContaining('redeploying') } });
    expect((await api.deployments.list({ serviceId: copy.previewServiceId! })).deployments[0]).toMatchObject({
      commitSha: newer,
      trigger: 'preview',
    });

    const closed = { ...pr, action: 'closed', pull_request: { ...(pr.pull_request as object), merged: false } };
    const close = await h.services.deliveries.receive(project.id, request(githubDelivery('pull_request', closed, secret)));
    expect(close).toMatchObject({ status: 202, body: { reason: expect.stringContaining('torn down') } });
    expect((await api.webhooks.previews({ projectId: project.id })).previews).toEqual([]);
    expect((await api.environments.list({ projectId: project.id })).environments.map((e) => e.name)).toEqual(['production']);
  });

  it('past maxOpen the new PR gets a limited preview and a failure status; forks only with fromForks', async () => {
    const { api, project, service, secret } = await projectWithService({ gitToken: TOKEN });
    h.services.statuses.start();
    h.services.poller.start();
    h.services.previews.start();
    await api.services.update({ serviceId: service.id, previews: { enabled: true, maxOpen: 1 } });
    const pr = fixture('github-pull-request');
    const withNumber = (n: number, sha: string) => ({
      ...pr,
      number: n,
      pull_request: {
        ...(pr.pull_request as object),
        number: n,
        head: { ...((pr.pull_request as Record<string, unknown>).head as object), sha },
      },
    });
    await h.services.deliveries.receive(project.id, request(githubDelivery('pull_request', withNumber(2, 'e'.repeat(40)), secret)));
    const limited = await h.services.deliveries.receive(
      project.id,
      request(githubDelivery('pull_request', withNumber(3, 'f'.repeat(40)), secret)),
    );
    expect(limited).toMatchObject({ status: 202, body: { reason: expect.stringContaining('limit was reached') } });
    const { previews } = await api.webhooks.previews({ projectId: project.id });
    expect(previews.map((p) => [p.number, p.status])).toEqual([
      [2, 'deploying'],
      [3, 'limited'],
    ]);
    const status = await standins.waitFor((s) => s.sha === 'f'.repeat(40) && s.state === 'failure', 20_000);
    expect(status.description).toContain('limit');

    const fork = withNumber(4, '1'.repeat(40)) as Record<string, unknown>;
    const pull = fork.pull_request as Record<string, unknown>;
    const head = pull.head as Record<string, unknown>;
    fork.pull_request = {
      ...pull,
      head: {
        ...head,
        repo: {
          ...(head.repo as object),
          full_name: 'stranger/Hello-World',
          fork: true,
          clone_url: 'https://github.com/stranger/Hello-World.git',
        },
      },
    };
    await api.services.update({ serviceId: service.id, previews: { maxOpen: 5 } });
    const refused = await h.services.deliveries.receive(project.id, request(githubDelivery('pull_request', fork, secret)));
    expect(refused).toMatchObject({ status: 202, body: { outcome: 'ignored', reason: expect.stringContaining('fork') } });
  });
});

describe('image services', () => {
  it('a Docker Hub delivery (unsigned: a hint) and digest polling deploy exactly the new digest; the same digest again deploys nothing', async () => {
    await h.close();
    let digest = `sha256:${'1'.repeat(64)}`;
    const reads: string[] = [];
    h = await createHarness({
      config: { rootDomain: 'apps.test' },
      hooks: {
        providers: [new GitHubProvider(), new StandardWebhooksProvider(), new DockerHubProvider()],
        registry: {
          async digestOf(image) {
            reads.push(image);
            return digest;
          },
        },
      },
    });
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'Images' });
    const { service } = await api.services.create({
      projectId: project.id,
      name: 'hook',
      repoUrl: 'container-image',
      containerImage: 'svendowideit/testhook:latest',
    });
    const secret = (await api.webhooks.createOrRotate({ projectId: project.id })).webhook.secret;
    const dockerhub = readFileSync(path.join(FIXTURES, 'dockerhub-push.json'), 'utf8');
    const hub = await h.services.deliveries.receive(project.id, {
      headers: { 'content-type': 'application/json' },
      body: Buffer.from(dockerhub),
      receivedAt: new Date(),
    });
    expect(hub).toMatchObject({ status: 202, body: { outcome: 'deployed', deploymentIds: [expect.any(String)] } });
    expect(reads).toEqual(['svendowideit/testhook:latest']);
    const [deployment] = (await api.deployments.list({ serviceId: service.id })).deployments;
    expect(deployment).toMatchObject({ trigger: 'registry', provider: 'dockerhub', imageDigest: digest, commitSha: null });
    // The very same body again is a replay; another push of the same digest deploys nothing (the delivery alone decides nothing).
    const replay = await h.services.deliveries.receive(project.id, {
      headers: { 'content-type': 'application/json' },
      body: Buffer.from(dockerhub),
      receivedAt: new Date(),
    });
    expect(replay).toMatchObject({ status: 200, body: { outcome: 'duplicate' } });
    const later = dockerhub.replace('"pushed_at": 1417566161', '"pushed_at": 1417566999');
    const again = await h.services.deliveries.receive(project.id, {
      headers: { 'content-type': 'application/json' },
      body: Buffer.from(later),
      receivedAt: new Date(),
    });
    expect(again).toMatchObject({ status: 202, body: { outcome: 'ignored', reason: expect.stringContaining('already runs') } });
    // The generic signed hook names an image too.
    digest = `sha256:${'2'.repeat(64)}`;
    const generic = await h.services.deliveries.receive(
      project.id,
      request(standardDelivery({ type: 'image.push', data: { image: 'svendowideit/testhook', tag: 'latest' } }, secret)),
    );
    expect(generic).toMatchObject({ status: 202, body: { outcome: 'deployed' } });
    // Digest polling: a new digest deploys with trigger poll; an unchanged one does not.
    await api.services.update({ serviceId: service.id, pollIntervalSeconds: 30 });
    digest = `sha256:${'3'.repeat(64)}`;
    await h.services.poller.pass();
    const polled = (await api.deployments.list({ serviceId: service.id })).deployments[0]!;
    expect(polled).toMatchObject({ trigger: 'poll', provider: 'registry', imageDigest: digest });
    expect((await api.services.overview({ serviceId: service.id })).service.poll).toMatchObject({
      lastSeen: digest,
      failures: 0,
      lastError: null,
    });
  });

  it('a failing poll backs off and shows on the service', async () => {
    await h.close();
    h = await createHarness({
      config: { rootDomain: 'apps.test' },
      hooks: { registry: { digestOf: () => Promise.reject(new Error('registry answered 503')) } },
    });
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'Images' });
    const { service } = await api.services.create({
      projectId: project.id,
      name: 'img',
      repoUrl: 'container-image',
      containerImage: 'busybox:1',
      pollIntervalSeconds: 30,
    });
    await h.services.poller.pass();
    const { poll } = (await api.services.overview({ serviceId: service.id })).service;
    expect(poll).toMatchObject({ failures: 1, lastError: 'registry answered 503' });
    expect(Date.parse(poll!.nextCheckAt!) - Date.parse(poll!.lastCheckedAt!)).toBe(60_000);
  });
});
