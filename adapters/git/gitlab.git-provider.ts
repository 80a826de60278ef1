import { createHash } from 'node:crypto';
import type { CommitStatus, CommitStatusApi, CommitStatusTarget, GitProvider } from '../../src/git-hooks/git-provider.port.js';
import {
  HookRefused,
  type HookEvent,
  type HookRepository,
  type HookRequest,
  type PullRequestAction,
} from '../../src/git-hooks/hook-event.js';
import {
  array,
  bareToken,
  branchOfRef,
  changedFilesOf,
  commitOf,
  constantTimeEqual,
  header,
  integer,
  object,
  optionalId,
  optionalObject,
  optionalString,
  postJson,
  pushedSha,
  shortDescription,
  string,
  trimSlash,
} from './hook-support.js';

/**
 * GitLab's project webhooks: `X-Gitlab-Event` (`Push Hook`, `Merge Request Hook`), the secret token sent
 * as is in `X-Gitlab-Token` (compared in constant time), and `Idempotency-Key` (GitLab 17.4, the same on
 * retries) or `X-Gitlab-Event-UUID` as the delivery id.
 */
export class GitLabProvider implements GitProvider {
  readonly id = 'gitlab' as const;

  recognizes(request: HookRequest): boolean {
    return header(request, 'x-gitlab-event') !== undefined;
  }

  eventName(request: HookRequest): string {
    return header(request, 'x-gitlab-event') ?? 'unknown';
  }

  /** Without either header, the body's hash: a retry sends the same body, another event a different one. */
  deliveryId(request: HookRequest): string | null {
    return (
      header(request, 'idempotency-key') ??
      header(request, 'x-gitlab-event-uuid') ??
      `sha256:${createHash('sha256').update(request.body).digest('hex')}`
    );
  }

  verify(request: HookRequest, secret: string): boolean {
    const token = header(request, 'x-gitlab-token');
    if (!token) throw new HookRefused('Unsigned delivery: no X-Gitlab-Token header');
    if (!constantTimeEqual(token, secret)) throw new HookRefused("X-Gitlab-Token is not the project's webhook secret");
    return true;
  }

  parse(request: HookRequest, payload: unknown): HookEvent[] {
    const body = object(payload, 'The body');
    const event = this.eventName(request);
    if (event === 'Push Hook') {
      const project = object(body.project, 'project');
      const commits = array(body.commits);
      const after = body.checkout_sha ?? body.after;
      const sha = after === null ? null : pushedSha(after, 'after');
      // GitLab lists at most 20 commits; past that the changed files are not all known.
      const total = typeof body.total_commits_count === 'number' ? body.total_commits_count : commits.length;
      const head = commits.map(optionalObject).find((c) => c?.id === sha) ?? optionalObject(commits.at(-1));
      return [
        {
          kind: 'push',
          repository: projectOf(project, optionalObject(body.repository)),
          branch: branchOfRef(string(body.ref, 'ref')),
          sha,
          commit: commitOf(head),
          changedFiles: changedFilesOf(commits, total <= commits.length),
        },
      ];
    }
    if (event === 'Merge Request Hook') return [mergeRequest(body)];
    return [{ kind: 'ignored', reason: `GitLab event ${event} is not one the platform acts on (Push Hook, Merge Request Hook)` }];
  }
}

/** GitLab's project (`path_with_namespace`, `git_http_url`, `git_ssh_url`, `web_url`, `id`). */
function projectOf(project: Record<string, unknown>, repository: Record<string, unknown> | null = null): HookRepository {
  const urls = ['git_http_url', 'git_ssh_url', 'http_url', 'ssh_url', 'web_url', 'url', 'homepage']
    .flatMap((key) => [optionalString(project[key]), optionalString(repository?.[key])])
    .filter((u): u is string => !!u);
  return { fullName: optionalString(project.path_with_namespace), urls: [...new Set(urls)], id: optionalId(project.id) };
}

const ACTIONS: Record<string, PullRequestAction> = { open: 'opened', reopen: 'reopened', close: 'closed', merge: 'merged' };

function mergeRequest(body: Record<string, unknown>): HookEvent {
  const mr = object(body.object_attributes, 'object_attributes');
  const action = optionalString(mr.action) ?? 'unknown';
  // An `update` carries `oldrev` only when commits were pushed; a title or label change leaves the code as it was.
  const mapped: PullRequestAction | undefined = action === 'update' ? (mr.oldrev ? 'updated' : undefined) : ACTIONS[action];
  if (!mapped) return { kind: 'ignored', reason: `Merge request ${action} changes no code` };
  const iid = integer(mr.iid, 'object_attributes.iid');
  const target = object(mr.target ?? body.project, 'object_attributes.target');
  const source = optionalObject(mr.source);
  const lastCommit = object(mr.last_commit, 'object_attributes.last_commit');
  const targetId = optionalId(mr.target_project_id) ?? optionalId(target.id);
  const sourceId = optionalId(mr.source_project_id) ?? optionalId(source?.id);
  const baseRepository = { ...projectOf(target), id: targetId };
  return {
    kind: 'pull_request',
    action: mapped,
    number: iid,
    repository: baseRepository,
    baseBranch: string(mr.target_branch, 'object_attributes.target_branch'),
    head: {
      sha: string(lastCommit.id, 'object_attributes.last_commit.id'),
      branch: string(mr.source_branch, 'object_attributes.source_branch'),
      repository: source ? { ...projectOf(source), id: sourceId } : { fullName: null, urls: [], id: sourceId },
    },
    // A source project deleted after the merge request was opened is still someone else's code.
    fromFork: sourceId === null || sourceId !== targetId,
    headRef: `refs/merge-requests/${iid}/head`,
    title: optionalString(mr.title),
    commit: commitOf(lastCommit),
  };
}

const GITLAB_STATES = { pending: 'running', success: 'success', failure: 'failed', error: 'canceled' } as const;

/**
 * `POST /projects/{id}/statuses/{sha}` with `PRIVATE-TOKEN` (a personal, project or group access token);
 * the project is its id when the delivery gave one, else its URL-encoded path.
 */
export class GitLabStatusApi implements CommitStatusApi {
  readonly provider = 'gitlab' as const;

  async post(target: CommitStatusTarget, status: CommitStatus, signal: AbortSignal): Promise<void> {
    const project = encodeURIComponent(target.repositoryId ?? target.repository);
    await postJson(
      'GitLab',
      `${trimSlash(target.apiUrl)}/projects/${project}/statuses/${encodeURIComponent(target.sha)}`,
      { 'private-token': bareToken(target.token) },
      {
        state: GITLAB_STATES[status.state],
        name: status.context,
        description: shortDescription(status.description, 255),
        ...(status.targetUrl ? { target_url: status.targetUrl } : {}),
        ...(target.ref ? { ref: target.ref } : {}),
      },
      target.token,
      signal,
    );
  }
}
