import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, createHmac, randomUUID } from 'node:crypto';

/**
 * Local stand-ins for the git hosts' commit status APIs, each speaking its host's documented wire format
 * (paths, auth headers, field names and state words), and refusing anything else the way the host does:
 * 401 without the token, 422/400 for a state the host does not know. One server, one base path per host:
 *   GitHub     POST /github/repos/{owner}/{repo}/statuses/{sha}            Authorization: Bearer <token>
 *   GitLab     POST /gitlab/api/v4/projects/{id}/statuses/{sha}            PRIVATE-TOKEN: <token>
 *   Gitea      POST /gitea/api/v1/repos/{owner}/{repo}/statuses/{sha}      Authorization: token <token>
 *   Forgejo    POST /forgejo/api/v1/repos/{owner}/{repo}/statuses/{sha}    Authorization: token <token>
 *   Bitbucket  POST /bitbucket/2.0/repositories/{ws}/{slug}/commit/{sha}/statuses/build  Authorization: Bearer <token>
 */
export interface RecordedStatus {
  provider: 'github' | 'gitlab' | 'gitea' | 'forgejo' | 'bitbucket';
  repository: string;
  sha: string;
  /** The host's own state word (`success`, `failed`, `SUCCESSFUL`...). */
  state: string;
  /** The platform's state word, mapped back (pending, success, failure, error). */
  normalized: 'pending' | 'success' | 'failure' | 'error';
  context: string;
  description: string;
  targetUrl: string | null;
  body: Record<string, unknown>;
}

export interface GitHostStandins {
  url: string;
  /** The API roots to configure: GITHUB_API_URL, GITLAB_URL, GITEA_URL, FORGEJO_URL, BITBUCKET_API_URL. */
  apiUrls: { github: string; gitlab: string; gitea: string; forgejo: string; bitbucket: string };
  statuses: RecordedStatus[];
  /** Requests refused (wrong token, unknown state), for tests that expect none. */
  refusals: Array<{ path: string; status: number; reason: string }>;
  /** Statuses posted for a commit, oldest first. */
  statusesOf(sha: string): RecordedStatus[];
  /** Resolves once a status matching `predicate` is recorded (or rejects after `timeoutMs`). */
  waitFor(predicate: (status: RecordedStatus) => boolean, timeoutMs?: number): Promise<RecordedStatus>;
  close(): Promise<void>;
}

const NORMAL: Record<string, Record<string, RecordedStatus['normalized']>> = {
  github: { pending: 'pending', success: 'success', failure: 'failure', error: 'error' },
  gitea: { pending: 'pending', success: 'success', failure: 'failure', error: 'error', warning: 'failure' },
  gitlab: { pending: 'pending', running: 'pending', success: 'success', failed: 'failure', canceled: 'error' },
  bitbucket: { INPROGRESS: 'pending', SUCCESSFUL: 'success', FAILED: 'failure', STOPPED: 'error' },
};

/** Starts the stand-ins; `token` is the only credential they accept. */
export async function startGitHostStandins(token: string): Promise<GitHostStandins> {
  const statuses: RecordedStatus[] = [];
  const refusals: GitHostStandins['refusals'] = [];
  const waiters = new Set<{ predicate: (s: RecordedStatus) => boolean; resolve: (s: RecordedStatus) => void }>();

  const refuse = (res: ServerResponse, path: string, status: number, reason: string, body: unknown) => {
    refusals.push({ path, status, reason });
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://standin');
    const path = decodeURIComponent(url.pathname);
    if (req.method !== 'POST') return refuse(res, path, 404, 'not a POST', { message: 'Not Found' });
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
    } catch {
      return refuse(res, path, 400, 'body is not JSON', { message: 'Problems parsing JSON' });
    }
    const auth = req.headers.authorization ?? '';
    let match: RegExpExecArray | null;
    if ((match = /^\/github\/repos\/([^/]+\/[^/]+)\/statuses\/([0-9a-f]+)$/.exec(path))) {
      if (auth !== `Bearer ${token}`) return refuse(res, path, 401, 'github: bad credentials', { message: 'Bad credentials' });
      if (req.headers.accept !== 'application/vnd.github+json')
        return refuse(res, path, 415, 'github: accept', { message: 'Unsupported Media Type' });
      return record(res, path, 'github', match[1]!, match[2]!, body, body.context, body.target_url);
    }
    if ((match = /^\/gitlab\/api\/v4\/projects\/([^/]+)\/statuses\/([0-9a-f]+)$/.exec(path))) {
      if (req.headers['private-token'] !== token) return refuse(res, path, 401, 'gitlab: unauthorized', { message: '401 Unauthorized' });
      return record(res, path, 'gitlab', match[1]!, match[2]!, body, body.name, body.target_url);
    }
    if ((match = /^\/(gitea|forgejo)\/api\/v1\/repos\/([^/]+\/[^/]+)\/statuses\/([0-9a-f]+)$/.exec(path))) {
      if (auth !== `token ${token}`) return refuse(res, path, 401, `${match[1]}: unauthorized`, { message: 'token is required' });
      return record(res, path, match[1] as 'gitea' | 'forgejo', match[2]!, match[3]!, body, body.context, body.target_url);
    }
    if ((match = /^\/bitbucket\/2\.0\/repositories\/([^/]+\/[^/]+)\/commit\/([0-9a-f]+)\/statuses\/build$/.exec(path))) {
      if (auth !== `Bearer ${token}`)
        return refuse(res, path, 401, 'bitbucket: unauthorized', { type: 'error', error: { message: 'Unauthorized' } });
      if (typeof body.key !== 'string' || body.key.length > 40 || typeof body.url !== 'string')
        return refuse(res, path, 400, 'bitbucket: key and url are required', {
          type: 'error',
          error: { message: 'key and url are required' },
        });
      return record(res, path, 'bitbucket', match[1]!, match[2]!, body, body.name ?? body.key, body.url);
    }
    return refuse(res, path, 404, 'no such API path', { message: 'Not Found' });
  }

  function record(
    res: ServerResponse,
    path: string,
    provider: RecordedStatus['provider'],
    repository: string,
    sha: string,
    body: Record<string, unknown>,
    context: unknown,
    targetUrl: unknown,
  ): void {
    const states = NORMAL[provider === 'forgejo' ? 'gitea' : provider]!;
    const state = String(body.state);
    const normalized = states[state];
    if (!normalized) {
      refuse(res, path, 422, `${provider}: unknown state ${state}`, { message: 'Validation Failed' });
      return;
    }
    const status: RecordedStatus = {
      provider,
      repository,
      sha,
      state,
      normalized,
      context: String(context ?? ''),
      description: String(body.description ?? ''),
      targetUrl: typeof targetUrl === 'string' ? targetUrl : null,
      body,
    };
    statuses.push(status);
    for (const waiter of waiters)
      if (waiter.predicate(status)) {
        waiters.delete(waiter);
        waiter.resolve(status);
      }
    res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ id: randomUUID(), state, ...body }));
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: Error) => res.writeHead(500).end(error.message));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    apiUrls: {
      github: `${url}/github`,
      gitlab: `${url}/gitlab/api/v4`,
      gitea: `${url}/gitea/api/v1`,
      forgejo: `${url}/forgejo/api/v1`,
      bitbucket: `${url}/bitbucket/2.0`,
    },
    statuses,
    refusals,
    statusesOf: (sha) => statuses.filter((s) => s.sha === sha),
    waitFor(predicate, timeoutMs = 60_000) {
      const found = statuses.find(predicate);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const waiter = { predicate, resolve };
        waiters.add(waiter);
        setTimeout(() => {
          if (waiters.delete(waiter))
            reject(
              new Error(
                `No matching commit status within ${timeoutMs} ms; got ${JSON.stringify(statuses.map((s) => [s.provider, s.sha.slice(0, 8), s.state, s.context]))}`,
              ),
            );
        }, timeoutMs).unref();
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Deliveries as each provider sends them: its headers and its signature, computed with the provider's
 * documented algorithm over the exact bytes sent.
 */
export type SignedDelivery = { headers: Record<string, string>; body: string };

export function githubDelivery(event: string, payload: unknown, secret: string, id: string = randomUUID()): SignedDelivery {
  const body = JSON.stringify(payload);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'GitHub-Hookshot/044aadd',
      'x-github-event': event,
      'x-github-delivery': id,
      'x-github-hook-id': '292430182',
      'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
    },
  };
}

export function gitlabDelivery(event: string, payload: unknown, secret: string, id: string = randomUUID()): SignedDelivery {
  return {
    body: JSON.stringify(payload),
    headers: {
      'content-type': 'application/json',
      'user-agent': 'GitLab/17.5.0',
      'x-gitlab-event': event,
      'x-gitlab-token': secret,
      'x-gitlab-event-uuid': id,
      'idempotency-key': id,
      'x-gitlab-instance': 'https://gitlab.example.com',
    },
  };
}

export function giteaDelivery(
  flavor: 'gitea' | 'forgejo',
  event: string,
  payload: unknown,
  secret: string,
  id: string = randomUUID(),
): SignedDelivery {
  const body = JSON.stringify(payload);
  const signature = createHmac('sha256', secret).update(body).digest('hex');
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-github-event': event,
    'x-github-delivery': id,
    'x-gitea-event': event,
    'x-gitea-delivery': id,
    'x-gitea-signature': signature,
    'x-gogs-event': event,
    'x-gogs-delivery': id,
  };
  if (flavor === 'forgejo')
    Object.assign(headers, { 'x-forgejo-event': event, 'x-forgejo-delivery': id, 'x-forgejo-signature': signature });
  return { body, headers };
}

export function bitbucketDelivery(eventKey: string, payload: unknown, secret: string, id: string = randomUUID()): SignedDelivery {
  const body = JSON.stringify(payload);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'Bitbucket-Webhooks/2.0',
      'x-event-key': eventKey,
      'x-request-uuid': id,
      'x-hook-uuid': '{5d5a5c8b-7c0a-4b0e-9d3c-1a2b3c4d5e6f}',
      'x-attempt-number': '1',
      'x-hub-signature': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
    },
  };
}

/** Standard Webhooks: `v1,` + base64 HMAC-SHA256 of `<id>.<timestamp>.<body>`, keyed with the secret after `whsec_`, base64-decoded. */
export function standardDelivery(payload: unknown, secret: string, opts: { id?: string; timestamp?: number } = {}): SignedDelivery {
  const body = JSON.stringify(payload);
  const id = opts.id ?? `msg_${randomUUID().replace(/-/g, '')}`;
  const timestamp = String(opts.timestamp ?? Math.floor(Date.now() / 1000));
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const signature = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': timestamp,
      'webhook-signature': `v1,${signature}`,
    },
  };
}

export function dockerHubDelivery(payload: unknown): SignedDelivery {
  return { body: JSON.stringify(payload), headers: { 'content-type': 'application/json' } };
}

/** A sha-256 hex digest, for tests comparing bodies. */
export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
