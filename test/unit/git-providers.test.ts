import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BitbucketProvider, BitbucketStatusApi } from '../../adapters/git/bitbucket.git-provider.js';
import { DockerHubProvider } from '../../adapters/git/dockerhub.git-provider.js';
import { GiteaProvider, GiteaStatusApi } from '../../adapters/git/gitea.git-provider.js';
import { GitHubProvider, GitHubStatusApi } from '../../adapters/git/github.git-provider.js';
import { GitLabProvider, GitLabStatusApi } from '../../adapters/git/gitlab.git-provider.js';
import { StandardWebhooksProvider } from '../../adapters/git/standard-webhooks.git-provider.js';
import type { CommitStatusApi } from '../../src/git-hooks/git-provider.port.js';
import { HookRefused, type HookRequest, type PullRequestEvent, type PushEvent } from '../../src/git-hooks/hook-event.js';
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

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/webhooks');
const fixture = (name: string) => JSON.parse(readFileSync(path.join(FIXTURES, `${name}.json`), 'utf8')) as Record<string, unknown>;
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

function request(delivery: SignedDelivery, receivedAt = new Date()): HookRequest {
  return {
    headers: Object.fromEntries(Object.entries(delivery.headers).map(([k, v]) => [k.toLowerCase(), v])),
    body: Buffer.from(delivery.body),
    receivedAt,
  };
}

function tampered(delivery: SignedDelivery): SignedDelivery {
  return { ...delivery, body: delivery.body.replace('"', ' "') };
}

describe('GitHub (X-Hub-Signature-256)', () => {
  const github = new GitHubProvider();
  it('verifies the documented HMAC-SHA256 over the raw body, and refuses a changed body, another secret and no signature', () => {
    const delivery = githubDelivery('push', fixture('github-push'), SECRET, 'd1');
    expect(github.recognizes(request(delivery))).toBe(true);
    expect(github.verify(request(delivery), SECRET)).toBe(true);
    expect(() => github.verify(request(tampered(delivery)), SECRET)).toThrow(HookRefused);
    expect(() => github.verify(request(delivery), `${SECRET}x`)).toThrow(HookRefused);
    const unsigned = { ...delivery, headers: { ...delivery.headers, 'x-hub-signature-256': '' } };
    expect(() => github.verify(request(unsigned), SECRET)).toThrow(/Unsigned/);
    expect(github.deliveryId(request(delivery))).toBe('d1');
  });

  it('reads the documented push payload: branch, sha, head commit, changed files, repository URLs', () => {
    const req = request(githubDelivery('push', fixture('github-push'), SECRET));
    const [event] = github.parse(req, fixture('github-push')) as PushEvent[];
    expect(event).toMatchObject({
      kind: 'push',
      branch: 'main',
      sha: 'a10867b14bb761a232cd80139fbd4c0d33264240',
      commit: { message: 'Update README.md', author: 'Codertocat' },
      changedFiles: ['README.md'],
    });
    expect(event!.repository.fullName).toBe('Codertocat/Hello-World');
    expect(event!.repository.urls).toContain('https://github.com/Codertocat/Hello-World.git');
  });

  it('reads pull_request opened, synchronize, closed and merged; ping; ignores other events and actions', () => {
    const pr = fixture('github-pull-request');
    const parse = (body: Record<string, unknown>, event = 'pull_request') =>
      github.parse(request(githubDelivery(event, body, SECRET)), body)[0]!;
    expect(parse(pr)).toMatchObject({
      kind: 'pull_request',
      action: 'opened',
      number: 2,
      baseBranch: 'main',
      head: { sha: 'ec26c3e57ca3a959ca5aad62de7213c562f8c821', branch: 'changes' },
      fromFork: false,
      headRef: 'refs/pull/2/head',
    });
    expect((parse({ ...pr, action: 'synchronize' }) as PullRequestEvent).action).toBe('updated');
    const closed = { ...pr, action: 'closed', pull_request: { ...(pr.pull_request as object), merged: true } };
    expect((parse(closed) as PullRequestEvent).action).toBe('merged');
    expect((parse({ ...pr, action: 'closed' }) as PullRequestEvent).action).toBe('closed');
    expect(parse({ ...pr, action: 'labeled' }).kind).toBe('ignored');
    expect(parse({ zen: 'Keep it logically awesome.', hook_id: 1 }, 'ping').kind).toBe('ping');
    expect(parse({}, 'issues')).toMatchObject({ kind: 'ignored' });
    const pull = pr.pull_request as Record<string, Record<string, unknown>>;
    const fork = {
      ...pr,
      pull_request: { ...pull, head: { ...pull.head, repo: { ...(pull.head!.repo as object), full_name: 'stranger/Hello-World' } } },
    };
    expect((parse(fork) as PullRequestEvent).fromFork).toBe(true);
  });
});

describe('GitLab (X-Gitlab-Token)', () => {
  const gitlab = new GitLabProvider();
  it('compares the token in constant time and refuses another or none', () => {
    const delivery = gitlabDelivery('Push Hook', fixture('gitlab-push'), SECRET, 'uuid-1');
    expect(gitlab.recognizes(request(delivery))).toBe(true);
    expect(gitlab.verify(request(delivery), SECRET)).toBe(true);
    expect(() => gitlab.verify(request(delivery), 'another')).toThrow(HookRefused);
    const { 'x-gitlab-token': _, ...headers } = delivery.headers;
    expect(() => gitlab.verify(request({ ...delivery, headers }), SECRET)).toThrow(/Unsigned/);
    expect(gitlab.deliveryId(request(delivery))).toBe('uuid-1');
  });

  it('reads the documented Push Hook and Merge Request Hook', () => {
    const push = gitlab.parse(request(gitlabDelivery('Push Hook', {}, SECRET)), fixture('gitlab-push'))[0] as PushEvent;
    expect(push).toMatchObject({
      branch: 'master',
      sha: 'da1560886d4f094c3e6c9ef40349f7d38b5d27d7',
      commit: { message: 'fixed readme', author: 'GitLab dev user' },
      repository: { fullName: 'mike/diaspora', id: '15' },
    });
    expect(push.changedFiles?.sort()).toEqual(['CHANGELOG', 'app/controller/application.rb']);
    expect(push.repository.urls).toContain('git@example.com:mike/diaspora.git');
    // More commits than listed: the files are not all known.
    const many = gitlab.parse(request(gitlabDelivery('Push Hook', {}, SECRET)), {
      ...fixture('gitlab-push'),
      total_commits_count: 40,
    })[0] as PushEvent;
    expect(many.changedFiles).toBeNull();

    const mr = fixture('gitlab-merge-request');
    const parse = (attrs: Record<string, unknown>) =>
      gitlab.parse(request(gitlabDelivery('Merge Request Hook', {}, SECRET)), {
        ...mr,
        object_attributes: { ...(mr.object_attributes as object), ...attrs },
      })[0]!;
    expect(parse({})).toMatchObject({
      kind: 'pull_request',
      action: 'opened',
      number: 1,
      baseBranch: 'master',
      head: { sha: 'da1560886d4f094c3e6c9ef40349f7d38b5d27d7', branch: 'ms-viewport' },
      fromFork: false,
      headRef: 'refs/merge-requests/1/head',
    });
    expect(parse({ action: 'update' }).kind).toBe('ignored');
    expect((parse({ action: 'update', oldrev: 'b6568db1bc1dcd7f8b4d5a946b0b91f9dacd7327' }) as PullRequestEvent).action).toBe('updated');
    expect((parse({ action: 'merge' }) as PullRequestEvent).action).toBe('merged');
    expect((parse({ action: 'close' }) as PullRequestEvent).action).toBe('closed');
    expect((parse({ source_project_id: 99 }) as PullRequestEvent).fromFork).toBe(true);
    expect(gitlab.parse(request(gitlabDelivery('Tag Push Hook', {}, SECRET)), {})[0]!.kind).toBe('ignored');
  });
});

describe('Gitea and Forgejo (X-Gitea-Signature / X-Forgejo-Signature)', () => {
  for (const flavor of ['gitea', 'forgejo'] as const) {
    const provider = new GiteaProvider(flavor);
    it(`${flavor}: hex HMAC-SHA256, the documented push and pull_request payloads`, () => {
      const delivery = giteaDelivery(flavor, 'push', fixture('gitea-push'), SECRET, 'f6266f16');
      expect(provider.recognizes(request(delivery))).toBe(true);
      expect(provider.verify(request(delivery), SECRET)).toBe(true);
      expect(() => provider.verify(request(tampered(delivery)), SECRET)).toThrow(HookRefused);
      expect(provider.deliveryId(request(delivery))).toBe('f6266f16');
      const push = provider.parse(request(delivery), fixture('gitea-push'))[0] as PushEvent;
      expect(push).toMatchObject({
        branch: 'develop',
        sha: 'bffeb74224043ba2feb48d137756c8a9331c449a',
        changedFiles: ['docs/webhooks.md'],
        commit: { message: 'Webhooks Yay!', author: 'Gitea' },
        repository: { fullName: 'gitea/webhooks' },
      });
      const pr = provider.parse(
        request(giteaDelivery(flavor, 'pull_request', {}, SECRET)),
        fixture('gitea-pull-request'),
      )[0] as PullRequestEvent;
      expect(pr).toMatchObject({ action: 'updated', number: 3, head: { branch: 'docs' }, fromFork: false, headRef: 'refs/pull/3/head' });
    });
  }
  it('Forgejo is told from Gitea by its own headers (it sends both)', () => {
    const forgejo = giteaDelivery('forgejo', 'push', fixture('gitea-push'), SECRET);
    const gitea = giteaDelivery('gitea', 'push', fixture('gitea-push'), SECRET);
    expect(new GiteaProvider('forgejo').recognizes(request(forgejo))).toBe(true);
    expect(new GiteaProvider('forgejo').recognizes(request(gitea))).toBe(false);
  });
});

describe('Bitbucket Cloud (X-Hub-Signature sha256=)', () => {
  const bitbucket = new BitbucketProvider();
  it('verifies, and reads the documented repo:push and pullrequest:created', () => {
    const delivery = bitbucketDelivery('repo:push', fixture('bitbucket-push'), SECRET, '{request-uuid}');
    expect(bitbucket.recognizes(request(delivery))).toBe(true);
    expect(bitbucket.verify(request(delivery), SECRET)).toBe(true);
    expect(() => bitbucket.verify(request(delivery), 'x'.repeat(40))).toThrow(HookRefused);
    expect(bitbucket.deliveryId(request(delivery))).toBe('{request-uuid}');
    const [push] = bitbucket.parse(request(delivery), fixture('bitbucket-push')) as PushEvent[];
    expect(push).toMatchObject({
      branch: 'master',
      sha: '10a1c2af0c2daf86d429c22f6a8c34d8a6ab9114',
      changedFiles: null,
      repository: {
        fullName: 'ntrs/jenkins-jobs',
        urls: ['https://bitbucket.org/ntrs/jenkins-jobs', 'https://bitbucket.org/ntrs/jenkins-jobs.git'],
      },
    });
    expect(push!.commit?.author).toBe('Alexander Mills <alex@example.com>');
    const [pr] = bitbucket.parse(
      request(bitbucketDelivery('pullrequest:created', {}, SECRET)),
      fixture('bitbucket-pullrequest-created'),
    ) as PullRequestEvent[];
    expect(pr).toMatchObject({
      action: 'opened',
      number: 8,
      baseBranch: 'master',
      head: { sha: 'd3022fc0ca3d', branch: 'feature/tes-1' },
      headRef: null,
    });
    const [merged] = bitbucket.parse(
      request(bitbucketDelivery('pullrequest:fulfilled', {}, SECRET)),
      fixture('bitbucket-pullrequest-created'),
    ) as PullRequestEvent[];
    expect(merged!.action).toBe('merged');
  });
});

describe('the generic hook (Standard Webhooks)', () => {
  const generic = new StandardWebhooksProvider();
  const push = {
    type: 'push',
    timestamp: '2026-01-01T00:00:00Z',
    data: { repository: 'https://git.example.com/team/app.git', branch: 'main', sha: 'a'.repeat(40), changedFiles: ['src/a.ts'] },
  };
  it('verifies v1 signatures within the 5-minute tolerance, in either direction, among several', () => {
    const now = Math.floor(Date.now() / 1000);
    const delivery = standardDelivery(push, SECRET, { timestamp: now });
    expect(generic.recognizes(request(delivery))).toBe(true);
    expect(generic.verify(request(delivery), SECRET)).toBe(true);
    expect(generic.verify(request(standardDelivery(push, SECRET, { timestamp: now - 299 })), SECRET)).toBe(true);
    expect(generic.verify(request(standardDelivery(push, SECRET, { timestamp: now + 299 })), SECRET)).toBe(true);
    expect(() => generic.verify(request(standardDelivery(push, SECRET, { timestamp: now - 301 })), SECRET)).toThrow(/tolerance/);
    expect(() => generic.verify(request(standardDelivery(push, SECRET, { timestamp: now + 301 })), SECRET)).toThrow(/tolerance/);
    const rotated = {
      ...delivery,
      headers: { ...delivery.headers, 'webhook-signature': `v1,AAAA ${delivery.headers['webhook-signature']}` },
    };
    expect(generic.verify(request(rotated), SECRET)).toBe(true);
    expect(() => generic.verify(request(tampered(delivery)), SECRET)).toThrow(HookRefused);
    const { 'webhook-timestamp': _, ...headers } = delivery.headers;
    expect(() => generic.verify(request({ ...delivery, headers }), SECRET)).toThrow(/Unsigned/);
    expect(generic.eventName(request(delivery))).toBe('push');
  });

  it('reads push, pull_request and image.push', () => {
    const req = request(standardDelivery(push, SECRET));
    expect(generic.parse(req, push)[0]).toMatchObject({ kind: 'push', branch: 'main', changedFiles: ['src/a.ts'] });
    const pr = {
      type: 'pull_request',
      data: {
        action: 'opened',
        number: 4,
        repository: 'team/app',
        baseBranch: 'main',
        head: { sha: 'b'.repeat(40), branch: 'feat', repository: 'someone/app' },
      },
    };
    expect(generic.parse(req, pr)[0]).toMatchObject({ kind: 'pull_request', number: 4, fromFork: true });
    expect(generic.parse(req, { type: 'image.push', data: { image: 'registry.example.com/team/app', tag: 'v2' } })[0]).toMatchObject({
      kind: 'image_push',
      tag: 'v2',
    });
    expect(() => generic.parse(req, { type: 'push', data: { repository: 'a/b', branch: 'main', sha: 'not-a-sha' } })).toThrow(
      /commit hash/,
    );
  });
});

describe('Docker Hub', () => {
  const hub = new DockerHubProvider();
  it('is told by its documented body, is never trusted, and names the tag', () => {
    const body = JSON.stringify(fixture('dockerhub-push'));
    const req: HookRequest = { headers: {}, body: Buffer.from(body), receivedAt: new Date() };
    expect(hub.recognizes(req)).toBe(true);
    expect(hub.verify()).toBe(false);
    expect(hub.parse(req, fixture('dockerhub-push'))).toEqual([{ kind: 'image_push', repository: 'svendowideit/testhook', tag: 'latest' }]);
    expect(hub.recognizes({ ...req, body: Buffer.from('{"zen":1}') })).toBe(false);
  });
});

describe("commit status APIs against stand-ins speaking each host's wire format", () => {
  const TOKEN = 'tok_0123456789abcdef';
  let standins: GitHostStandins;
  beforeAll(async () => {
    standins = await startGitHostStandins(TOKEN);
  });
  afterAll(() => standins.close());

  const cases: Array<[CommitStatusApi, keyof GitHostStandins['apiUrls'], string | null]> = [
    [new GitHubStatusApi(), 'github', null],
    [new GitLabStatusApi(), 'gitlab', '15'],
    [new GiteaStatusApi('gitea'), 'gitea', null],
    [new GiteaStatusApi('forgejo'), 'forgejo', null],
    [new BitbucketStatusApi(), 'bitbucket', null],
  ];
  for (const [api, provider, repositoryId] of cases) {
    it(`${provider}: every state is accepted, a wrong token is refused with the host's reason and never echoed`, async () => {
      const sha = `${provider.length}`.padEnd(40, 'c');
      const target = {
        provider: api.provider,
        apiUrl: standins.apiUrls[provider],
        repository: 'team/app',
        repositoryId,
        sha,
        ref: 'main',
        token: TOKEN,
      };
      for (const state of ['pending', 'success', 'failure', 'error'] as const)
        await api.post(
          target,
          { state, context: 'slipway/web', description: `deploy ${state}`, targetUrl: 'https://slipway.example.com/d/1' },
          AbortSignal.timeout(5000),
        );
      const recorded = standins.statusesOf(sha).filter((s) => s.provider === provider);
      expect(recorded.map((s) => s.normalized)).toEqual(['pending', 'success', 'failure', 'error']);
      expect(recorded[0]).toMatchObject({ context: 'slipway/web', targetUrl: 'https://slipway.example.com/d/1' });
      const error = await api
        .post(
          { ...target, token: 'wrong-token-value' },
          { state: 'success', context: 'c', description: 'd', targetUrl: null },
          AbortSignal.timeout(5000),
        )
        .then(
          () => null,
          (e: Error) => e,
        );
      expect(error?.message).toMatch(/HTTP 401/);
      expect(error?.message).not.toContain('wrong-token-value');
    });
  }
});
