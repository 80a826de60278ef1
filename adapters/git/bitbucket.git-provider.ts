import type { CommitStatus, CommitStatusApi, CommitStatusTarget, GitProvider } from '../../src/git-hooks/git-provider.port.js';
import {
  HookMalformed,
  type HookEvent,
  type HookRepository,
  type HookRequest,
  type PullRequestAction,
} from '../../src/git-hooks/hook-event.js';
import {
  array,
  basicAuth,
  commitOf,
  header,
  integer,
  object,
  optionalId,
  optionalObject,
  optionalString,
  postJson,
  repoPath,
  shortDescription,
  string,
  trimSlash,
  verifyHexHmac,
} from './hook-support.js';

/**
 * Bitbucket Cloud's webhooks: `X-Event-Key` (`repo:push`, `pullrequest:*`), `X-Request-UUID`, and
 * `X-Hub-Signature: sha256=<hex HMAC-SHA256 of the body>` with the webhook's secret. A push lists its
 * branch changes, not its files; a pull request's commit hash is abbreviated (the build resolves it).
 */
export class BitbucketProvider implements GitProvider {
  readonly id = 'bitbucket' as const;

  recognizes(request: HookRequest): boolean {
    return header(request, 'x-event-key') !== undefined;
  }

  eventName(request: HookRequest): string {
    return header(request, 'x-event-key') ?? 'unknown';
  }

  deliveryId(request: HookRequest): string | null {
    return header(request, 'x-request-uuid') ?? null;
  }

  verify(request: HookRequest, secret: string): boolean {
    verifyHexHmac(request, 'x-hub-signature', secret, 'sha256=');
    return true;
  }

  parse(request: HookRequest, payload: unknown): HookEvent[] {
    const body = object(payload, 'The body');
    const event = this.eventName(request);
    if (event === 'repo:push') {
      const repository = repositoryOf(body.repository, 'repository');
      const push = object(body.push, 'push');
      const events: HookEvent[] = [];
      for (const raw of array(push.changes)) {
        const change = object(raw, 'push.changes[]');
        const next = optionalObject(change.new);
        const previous = optionalObject(change.old);
        const ref = next ?? previous;
        if (!ref) continue;
        const isBranch = ref.type === 'branch' || ref.type === 'named_branch';
        const target = next ? object(next.target, 'push.changes[].new.target') : null;
        events.push({
          kind: 'push',
          repository,
          branch: isBranch ? string(ref.name, 'push.changes[].new.name') : null,
          sha: target ? string(target.hash, 'push.changes[].new.target.hash') : null,
          commit: target ? commitOf(target) : null,
          changedFiles: null,
        });
      }
      if (events.length === 0) throw new HookMalformed('push.changes lists no branch');
      return events;
    }
    if (event.startsWith('pullrequest:')) return [pullRequest(body, event)];
    return [{ kind: 'ignored', reason: `Bitbucket event ${event} is not one the platform acts on (repo:push, pullrequest:*)` }];
  }
}

/** Bitbucket's repository: `full_name`, `links.html.href` (the clone URL is it with `.git`), `uuid`. */
function repositoryOf(value: unknown, what: string): HookRepository {
  const repo = object(value, what);
  const html = optionalString(optionalObject(optionalObject(repo.links)?.html)?.href);
  const fullName = optionalString(repo.full_name);
  return { fullName, urls: html ? [html, `${html}.git`] : [], id: optionalId(repo.uuid) };
}

const ACTIONS: Record<string, PullRequestAction> = {
  'pullrequest:created': 'opened',
  'pullrequest:updated': 'updated',
  'pullrequest:fulfilled': 'merged',
  'pullrequest:rejected': 'closed',
};

function pullRequest(body: Record<string, unknown>, event: string): HookEvent {
  const action = ACTIONS[event];
  if (!action) return { kind: 'ignored', reason: `Bitbucket ${event} changes no code` };
  const pr = object(body.pullrequest, 'pullrequest');
  const source = object(pr.source, 'pullrequest.source');
  const destination = object(pr.destination, 'pullrequest.destination');
  const baseRepository = repositoryOf(destination.repository ?? body.repository, 'pullrequest.destination.repository');
  const headRepository = source.repository
    ? repositoryOf(source.repository, 'pullrequest.source.repository')
    : { fullName: null, urls: [], id: null };
  return {
    kind: 'pull_request',
    action,
    number: integer(pr.id, 'pullrequest.id'),
    repository: baseRepository,
    baseBranch: string(object(destination.branch, 'pullrequest.destination.branch').name, 'pullrequest.destination.branch.name'),
    head: {
      sha: string(object(source.commit, 'pullrequest.source.commit').hash, 'pullrequest.source.commit.hash'),
      branch: string(object(source.branch, 'pullrequest.source.branch').name, 'pullrequest.source.branch.name'),
      repository: headRepository,
    },
    fromFork: headRepository.fullName === null || headRepository.fullName.toLowerCase() !== baseRepository.fullName?.toLowerCase(),
    // Bitbucket publishes no ref for a pull request: the head is fetched from its own repository's branch.
    headRef: null,
    title: optionalString(pr.title),
    commit: null,
  };
}

const BITBUCKET_STATES = { pending: 'INPROGRESS', success: 'SUCCESSFUL', failure: 'FAILED', error: 'STOPPED' } as const;

/**
 * `POST /repositories/{workspace}/{repo_slug}/commit/{sha}/statuses/build`: a bearer access token, or
 * `user:app-password` as basic auth. Bitbucket requires a URL, and a key of at most 40 characters.
 */
export class BitbucketStatusApi implements CommitStatusApi {
  readonly provider = 'bitbucket' as const;

  async post(target: CommitStatusTarget, status: CommitStatus, signal: AbortSignal): Promise<void> {
    await postJson(
      'Bitbucket',
      `${trimSlash(target.apiUrl)}/repositories/${repoPath(target.repository)}/commit/${encodeURIComponent(target.sha)}/statuses/build`,
      { authorization: target.token.includes(':') ? basicAuth(target.token, 'x-token-auth') : `Bearer ${target.token}` },
      {
        key: status.context.slice(0, 40),
        name: status.context,
        state: BITBUCKET_STATES[status.state],
        description: shortDescription(status.description, 255),
        url: status.targetUrl ?? 'about:blank',
      },
      target.token,
      signal,
    );
  }
}
