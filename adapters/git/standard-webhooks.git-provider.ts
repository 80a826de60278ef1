import type { GitProvider } from '../../src/git-hooks/git-provider.port.js';
import {
  HookMalformed,
  HookRefused,
  PULL_REQUEST_ACTIONS,
  type HookEvent,
  type HookRepository,
  type HookRequest,
  type PullRequestAction,
} from '../../src/git-hooks/hook-event.js';
import { array, constantTimeEqual, header, hmacSha256, integer, object, optionalObject, optionalString, string } from './hook-support.js';

/** Standard Webhooks' recommended tolerance: a delivery signed more than 5 minutes from now is a replay. */
export const STANDARD_WEBHOOKS_TOLERANCE_SECONDS = 5 * 60;

/**
 * The generic hook for any other git host or CI, signed with the Standard Webhooks scheme: `webhook-id`,
 * `webhook-timestamp` (Unix seconds) and `webhook-signature` (space-separated `v1,<base64>`, each an
 * HMAC-SHA256 of `<id>.<timestamp>.<body>` keyed with the secret after `whsec_`, base64-decoded).
 * The body is `{type, timestamp, data}`; docs/push-to-deploy.md lists the types and their data.
 */
export class StandardWebhooksProvider implements GitProvider {
  readonly id = 'generic' as const;

  constructor(private readonly toleranceSeconds = STANDARD_WEBHOOKS_TOLERANCE_SECONDS) {}

  recognizes(request: HookRequest): boolean {
    return header(request, 'webhook-id') !== undefined || header(request, 'webhook-signature') !== undefined;
  }

  /** The body's `type`; read before verification only to label the delivery record. */
  eventName(request: HookRequest): string {
    try {
      const type = (JSON.parse(request.body.toString('utf8')) as { type?: unknown }).type;
      return typeof type === 'string' && type.length <= 100 ? type : 'unknown';
    } catch {
      return 'unknown';
    }
  }

  deliveryId(request: HookRequest): string | null {
    return header(request, 'webhook-id') ?? null;
  }

  verify(request: HookRequest, secret: string): boolean {
    const id = header(request, 'webhook-id');
    const timestamp = header(request, 'webhook-timestamp');
    const signatures = header(request, 'webhook-signature');
    if (!id || !timestamp || !signatures)
      throw new HookRefused('Unsigned delivery: webhook-id, webhook-timestamp and webhook-signature are all required');
    if (!/^\d{1,12}$/.test(timestamp)) throw new HookRefused('webhook-timestamp is not a Unix time in seconds');
    const skew = Math.abs(request.receivedAt.getTime() / 1000 - Number(timestamp));
    if (skew > this.toleranceSeconds)
      throw new HookRefused(`webhook-timestamp is ${Math.round(skew)} s from now, past the ${this.toleranceSeconds} s tolerance`);
    const expected = hmacSha256(keyOf(secret), `${id}.${timestamp}.`, request.body).toString('base64');
    // Every entry is compared (a sender rotating its secret sends two), so the time does not say which matched.
    let matched = false;
    for (const entry of signatures.split(' ')) {
      const [version, signature] = entry.split(',', 2);
      if (version === 'v1' && signature && constantTimeEqual(signature, expected)) matched = true;
    }
    if (!matched) throw new HookRefused("No webhook-signature matches the body signed with the project's webhook secret");
    return true;
  }

  parse(_request: HookRequest, payload: unknown): HookEvent[] {
    const body = object(payload, 'The body');
    const type = string(body.type, 'type');
    const data = object(body.data, 'data');
    if (type === 'ping') return [{ kind: 'ping' }];
    if (type === 'push') {
      const files = data.changedFiles === undefined || data.changedFiles === null ? null : array(data.changedFiles);
      if (files?.some((f) => typeof f !== 'string')) throw new HookMalformed('data.changedFiles must be an array of paths');
      return [
        {
          kind: 'push',
          repository: repositoryOf(data.repository, 'data.repository'),
          branch: string(data.branch, 'data.branch'),
          sha: data.sha === null ? null : sha(data.sha, 'data.sha'),
          commit: { message: optionalString(data.message), author: optionalString(data.author) },
          changedFiles: files as string[] | null,
        },
      ];
    }
    if (type === 'pull_request') {
      const action = string(data.action, 'data.action');
      if (!(PULL_REQUEST_ACTIONS as readonly string[]).includes(action))
        throw new HookMalformed(`data.action must be one of ${PULL_REQUEST_ACTIONS.join(', ')}`);
      const head = object(data.head, 'data.head');
      const repository = repositoryOf(data.repository, 'data.repository');
      const headRepository = head.repository === undefined ? repository : repositoryOf(head.repository, 'data.head.repository');
      return [
        {
          kind: 'pull_request',
          action: action as PullRequestAction,
          number: integer(data.number, 'data.number'),
          repository,
          baseBranch: string(data.baseBranch, 'data.baseBranch'),
          head: { sha: sha(head.sha, 'data.head.sha'), branch: string(head.branch, 'data.head.branch'), repository: headRepository },
          fromFork: sameRepository(repository, headRepository) === false,
          headRef: optionalString(data.headRef),
          title: optionalString(data.title),
          commit: { message: optionalString(data.message), author: optionalString(data.author) },
        },
      ];
    }
    if (type === 'image.push')
      return [{ kind: 'image_push', repository: string(data.image, 'data.image'), tag: optionalString(data.tag) ?? 'latest' }];
    return [{ kind: 'ignored', reason: `Event type ${type} is not one the platform acts on (push, pull_request, image.push, ping)` }];
  }
}

/** `whsec_<base64>` is the scheme's form; any other string is used as its own bytes. */
function keyOf(secret: string): Buffer {
  return secret.startsWith('whsec_') ? Buffer.from(secret.slice('whsec_'.length), 'base64') : Buffer.from(secret, 'utf8');
}

function sha(value: unknown, what: string): string {
  const text = string(value, what);
  if (!/^[0-9a-fA-F]{7,64}$/.test(text)) throw new HookMalformed(`${what} must be a commit hash`);
  return text.toLowerCase();
}

/** A repository URL, or `owner/name`, or `{fullName, url}`. */
function repositoryOf(value: unknown, what: string): HookRepository {
  if (typeof value === 'string' && value.length > 0) {
    const isUrl = /^[a-z][a-z0-9+.-]*:\/\//i.test(value) || /^[^@\s]+@[^:\s]+:/.test(value);
    return isUrl ? { fullName: null, urls: [value], id: null } : { fullName: value, urls: [], id: null };
  }
  const repo = optionalObject(value);
  if (!repo) throw new HookMalformed(`${what} must be a repository URL, "owner/name" or {fullName, url}`);
  const url = optionalString(repo.url);
  return { fullName: optionalString(repo.fullName), urls: url ? [url] : [], id: null };
}

function sameRepository(a: HookRepository, b: HookRepository): boolean {
  if (a.fullName && b.fullName) return a.fullName.toLowerCase() === b.fullName.toLowerCase();
  return a.urls.some((url) => b.urls.includes(url));
}
