import type { CommitStatus, CommitStatusApi, CommitStatusTarget, GitProvider } from '../../src/git-hooks/git-provider.port.js';
import type { HookEvent, HookRequest, PullRequestAction } from '../../src/git-hooks/hook-event.js';
import {
  array,
  basicAuth,
  branchOfRef,
  changedFilesOf,
  commitOf,
  header,
  integer,
  object,
  optionalObject,
  optionalString,
  postJson,
  pushedSha,
  repoPath,
  repositoryOf,
  shortDescription,
  string,
  trimSlash,
  verifyHexHmac,
} from './hook-support.js';

/**
 * Gitea's webhooks, and Forgejo's (a fork of Gitea with the same payloads): `X-Gitea-Event` /
 * `X-Forgejo-Event`, `X-Gitea-Delivery` / `X-Forgejo-Delivery`, and `X-Gitea-Signature` /
 * `X-Forgejo-Signature`: the hex HMAC-SHA256 of the body with the webhook's secret, no prefix.
 * Forgejo sends the Gitea headers too, so it is asked first.
 */
export class GiteaProvider implements GitProvider {
  private readonly prefix: string;

  constructor(readonly id: 'gitea' | 'forgejo') {
    this.prefix = id === 'gitea' ? 'x-gitea' : 'x-forgejo';
  }

  recognizes(request: HookRequest): boolean {
    return header(request, `${this.prefix}-event`) !== undefined;
  }

  eventName(request: HookRequest): string {
    return header(request, `${this.prefix}-event`) ?? 'unknown';
  }

  deliveryId(request: HookRequest): string | null {
    return header(request, `${this.prefix}-delivery`) ?? null;
  }

  verify(request: HookRequest, secret: string): boolean {
    verifyHexHmac(request, `${this.prefix}-signature`, secret, '');
    return true;
  }

  parse(request: HookRequest, payload: unknown): HookEvent[] {
    const body = object(payload, 'The body');
    const event = this.eventName(request);
    if (event === 'push') {
      return [
        {
          kind: 'push',
          repository: repositoryOf(body.repository, 'repository'),
          branch: branchOfRef(string(body.ref, 'ref')),
          sha: pushedSha(body.after, 'after'),
          commit: commitOf(optionalObject(body.head_commit) ?? optionalObject(array(body.commits).at(-1))),
          // Gitea lists at most the push's first commits (its webhook.payload commits setting); `total_commits` says how many there were.
          changedFiles: changedFilesOf(
            array(body.commits),
            typeof body.total_commits !== 'number' || body.total_commits <= array(body.commits).length,
          ),
        },
      ];
    }
    if (event === 'pull_request') return [pullRequest(body, this.id)];
    return [
      {
        kind: 'ignored',
        reason: `${this.id === 'gitea' ? 'Gitea' : 'Forgejo'} event ${event} is not one the platform acts on (push, pull_request)`,
      },
    ];
  }
}

const ACTIONS: Record<string, PullRequestAction> = { opened: 'opened', reopened: 'reopened', synchronized: 'updated' };

function pullRequest(body: Record<string, unknown>, provider: string): HookEvent {
  const action = string(body.action, 'action');
  const pr = object(body.pull_request, 'pull_request');
  const mapped: PullRequestAction | undefined = action === 'closed' ? (pr.merged === true ? 'merged' : 'closed') : ACTIONS[action];
  if (!mapped) return { kind: 'ignored', reason: `${provider} pull_request ${action} changes no code` };
  const number = integer(body.number ?? pr.number, 'number');
  const head = object(pr.head, 'pull_request.head');
  const base = object(pr.base, 'pull_request.base');
  const baseRepository = repositoryOf(base.repo ?? body.repository, 'pull_request.base.repo');
  const headRepository = head.repo ? repositoryOf(head.repo, 'pull_request.head.repo') : { fullName: null, urls: [], id: null };
  return {
    kind: 'pull_request',
    action: mapped,
    number,
    repository: baseRepository,
    baseBranch: string(base.ref, 'pull_request.base.ref'),
    head: { sha: string(head.sha, 'pull_request.head.sha'), branch: string(head.ref, 'pull_request.head.ref'), repository: headRepository },
    fromFork: headRepository.fullName === null || headRepository.fullName.toLowerCase() !== baseRepository.fullName?.toLowerCase(),
    headRef: `refs/pull/${number}/head`,
    title: optionalString(pr.title),
    commit: null,
  };
}

/** `POST /repos/{owner}/{repo}/statuses/{sha}` with `Authorization: token <token>` (Gitea and Forgejo alike). */
export class GiteaStatusApi implements CommitStatusApi {
  constructor(readonly provider: 'gitea' | 'forgejo') {}

  async post(target: CommitStatusTarget, status: CommitStatus, signal: AbortSignal): Promise<void> {
    await postJson(
      this.provider === 'gitea' ? 'Gitea' : 'Forgejo',
      `${trimSlash(target.apiUrl)}/repos/${repoPath(target.repository)}/statuses/${encodeURIComponent(target.sha)}`,
      { authorization: target.token.includes(':') ? basicAuth(target.token, 'slipway') : `token ${target.token}` },
      {
        state: status.state,
        context: status.context,
        description: shortDescription(status.description, 255),
        ...(status.targetUrl ? { target_url: status.targetUrl } : {}),
      },
      target.token,
      signal,
    );
  }
}
