import type { CommitStatus, CommitStatusApi, CommitStatusTarget, GitProvider } from '../../src/git-hooks/git-provider.port.js';
import type { HookEvent, HookRequest, PullRequestAction } from '../../src/git-hooks/hook-event.js';
import {
  array,
  bareToken,
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
 * GitHub's repository webhooks: `X-GitHub-Event` (push, pull_request, ping), `X-GitHub-Delivery`, and
 * `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>` with the webhook's secret. Gitea and Forgejo
 * send `X-GitHub-Event` too, so their adapters are asked first.
 */
export class GitHubProvider implements GitProvider {
  readonly id = 'github' as const;

  recognizes(request: HookRequest): boolean {
    return header(request, 'x-github-event') !== undefined;
  }

  eventName(request: HookRequest): string {
    return header(request, 'x-github-event') ?? 'unknown';
  }

  deliveryId(request: HookRequest): string | null {
    return header(request, 'x-github-delivery') ?? null;
  }

  verify(request: HookRequest, secret: string): boolean {
    verifyHexHmac(request, 'x-hub-signature-256', secret, 'sha256=');
    return true;
  }

  parse(request: HookRequest, payload: unknown): HookEvent[] {
    const body = object(payload, 'The body');
    const event = this.eventName(request);
    if (event === 'ping') return [{ kind: 'ping' }];
    if (event === 'push') {
      const headCommit = optionalObject(body.head_commit);
      return [
        {
          kind: 'push',
          repository: repositoryOf(body.repository, 'repository'),
          branch: branchOfRef(string(body.ref, 'ref')),
          sha: body.deleted === true ? null : pushedSha(body.after, 'after'),
          commit: commitOf(headCommit),
          changedFiles: changedFilesOf(array(body.commits), true),
        },
      ];
    }
    if (event === 'pull_request') return [pullRequest(body)];
    return [{ kind: 'ignored', reason: `GitHub event ${event} is not one the platform acts on (push, pull_request, ping)` }];
  }
}

const ACTIONS: Record<string, PullRequestAction> = { opened: 'opened', reopened: 'reopened', synchronize: 'updated' };

function pullRequest(body: Record<string, unknown>): HookEvent {
  const action = string(body.action, 'action');
  const pr = object(body.pull_request, 'pull_request');
  const mapped: PullRequestAction | undefined = action === 'closed' ? (pr.merged === true ? 'merged' : 'closed') : ACTIONS[action];
  if (!mapped) return { kind: 'ignored', reason: `pull_request ${action} changes no code` };
  const number = integer(body.number ?? pr.number, 'number');
  const head = object(pr.head, 'pull_request.head');
  const base = object(pr.base, 'pull_request.base');
  const baseRepository = repositoryOf(base.repo ?? body.repository, 'pull_request.base.repo');
  // A fork that was deleted leaves `head.repo` null: its code is still someone else's.
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

/** `POST /repos/{owner}/{repo}/statuses/{sha}` with a bearer token (a PAT, or an installation token). */
export class GitHubStatusApi implements CommitStatusApi {
  readonly provider = 'github' as const;

  async post(target: CommitStatusTarget, status: CommitStatus, signal: AbortSignal): Promise<void> {
    await postJson(
      'GitHub',
      `${trimSlash(target.apiUrl)}/repos/${repoPath(target.repository)}/statuses/${encodeURIComponent(target.sha)}`,
      {
        authorization: `Bearer ${bareToken(target.token)}`,
        accept: 'application/vnd.github+json',
        'x-github-api-version': '2022-11-28',
      },
      {
        state: status.state,
        context: status.context,
        description: shortDescription(status.description),
        ...(status.targetUrl ? { target_url: status.targetUrl } : {}),
      },
      target.token,
      signal,
    );
  }
}
