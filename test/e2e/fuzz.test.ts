import { createHmac } from 'node:crypto';
import { Agent, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fuzzer, operationsOf, type FuzzRequest } from '../helpers/fuzz.js';
import { ok } from '../helpers/http.js';
import { ownPortRange } from '../helpers/docker.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/*
 * A seeded fuzz of every operation of /api/openapi.json (read at run time, so new operations join
 * by themselves) against the server as `npm start` runs it. Bodies come from each operation's
 * schema and are then broken; path parameters get real ids, traversal, encoded separators and
 * injection strings. Asserts: no 5xx, no request over 5 s, a JSON `{error, message, details}` body
 * on every 4xx, the process alive at the end, and no stack trace in its output. The one 5xx that is an
 * answer, not a fault: a 502 `upstream_error` from an operation the document says waits on an outside
 * service (an AI vendor, a DNS provider, the object store) that a fuzzed setting pointed somewhere
 * unreachable; it must have the error body too.
 *
 * Replay a run with FUZZ_SEED=<seed printed below>; FUZZ_REQUESTS sets the count (default 10,400).
 * The deploy runner is paused (BUILD_CONCURRENCY=0, as in every API test): POST deployments only
 * queues rows, so no build runs. DELETE operations never get the fixture project or service id
 * (nor the app, database and storage ids, the same services by other names: they would delete the targets
 * every other request needs); they get every other kind of value.
 */

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
const TOTAL = Number(process.env.FUZZ_REQUESTS ?? 10_400);
const CONCURRENCY = 8;
const HANG_MS = 5_000;

let server: ServerProcess;
const real: Record<string, string> = {};
let hookSecret = '';

beforeAll(async () => {
  server = await startServerProcess({
    RATE_LIMIT_PER_MINUTE: '0',
    // Hundreds of services, none deployed: a window of its own as large as they need.
    HOST_PORT_RANGE: ownPortRange(2000),
    AUTH_FAILURES_PER_MINUTE: '100000',
    // The authentication endpoints' own budgets would answer nearly all of their share with 429.
    AUTH_RATE_LIMITS: 'signup=100000,signin=100000,password-reset=100000',
    // An external registry a fuzzed body names is checked within the hang budget (a 502 when it does not answer).
    REGISTRY_CHECK_TIMEOUT_MS: '2000',
    WEBHOOK_RATE_LIMIT_PER_MINUTE: '1000000',
    // The fixture channel points at a closed loopback port: its test sends are refused at once.
    NOTIFY_ALLOW_PRIVATE_TARGETS: 'true',
  });
  const admin = api(server.url, server.token);
  const project = (await ok(admin('POST', '/api/projects', { name: 'Fuzz', description: 'fuzz target' }), 'project')).project;
  const other = (await ok(admin('POST', '/api/projects', { name: 'Fuzz other' }), 'other project')).project;
  const service = (await ok(admin('POST', `/api/projects/${project.id}/services`, { name: 'web', repoFullName: 'acme/web' }), 'service'))
    .service;
  await ok(admin('POST', `/api/services/${service.id}/env`, { key: 'GREETING', value: 'hi', secret: true }), 'env');
  const domain = (await ok(admin('POST', `/api/services/${service.id}/domains`, { hostname: 'www.fuzz.test' }), 'domain')).domain;
  const deployment = (await ok(admin('POST', `/api/services/${service.id}/deployments`), 'deployment')).deployment;
  const overview = await ok(admin('GET', `/api/services/${service.id}/overview`), 'overview');
  // The database operations (admin, imports, TLS) get a Postgres service: past the engine checks, to the not-running one.
  const database = (
    await ok(
      admin('POST', `/api/projects/${project.id}/services`, {
        name: 'db',
        repoUrl: 'database',
        repoFullName: 'database:postgres',
        branch: 'main',
      }),
      'database',
    )
  ).service;
  // An owner and a member: the users' paths get a real id (the key manages users like the owner).
  const anyone = api(server.url, undefined);
  await ok(anyone('POST', '/api/auth/signup', { email: 'owner@fuzz.test', password: 'fuzz owner password', name: 'Owner' }), 'owner');
  await ok(admin('PUT', '/api/settings', { registrationOpen: true }), 'registration');
  const member = (
    await ok(anyone('POST', '/api/auth/signup', { email: 'member@fuzz.test', password: 'fuzz member pw', name: 'M' }), 'member')
  ).user;
  // A backup (of a database that runs no container here: it fails at once) for the backup operations' {backupId}.
  const db = (
    await ok(
      admin('POST', `/api/projects/${project.id}/services`, { name: 'db', repoUrl: 'database', repoFullName: 'database:postgres' }),
      'database',
    )
  ).service;
  const backup = (await ok(admin('POST', `/api/services/${db.id}/database/backups`, { storage: 'disk' }), 'backup')).backup;
  // A backup configuration of it, for the general API's {configurationId}.
  const configuration = (await ok(admin('POST', '/api/backups', { serviceId: db.id, schedule: '0 3 * * *' }), 'configuration'))
    .configuration;
  await ok(admin('PUT', `/api/projects/${project.id}/env`, { env: { SHARED: 'x', SECRET: { value: 'y', secret: true } } }), 'shared env');
  const storage = (await ok(admin('POST', '/api/storage', { projectId: project.id, name: 'files' }), 'storage')).storage;
  // A notification channel and a rule for the notifications' {id} (the api keys' {id} gets it too, and answers 404).
  const channel = (
    await ok(
      admin('POST', '/api/notifications/channels', { type: 'webhook', name: 'fuzz', config: { url: 'http://127.0.0.1:9/fuzz' } }),
      'channel',
    )
  ).channel;
  await ok(
    admin('POST', '/api/notifications/rules', { projectId: project.id, events: ['deployment.*'], channelIds: [channel.id] }),
    'rule',
  );
  // The host, the first server: the servers' {id} gets its id (removing it is refused: the last manager).
  const local = (await ok(admin('GET', '/api/servers'), 'servers')).servers[0];
  Object.assign(real, {
    id: channel.id,
    channelId: channel.id,
    serverId: local.id,
    projectId: project.id,
    projectSlug: project.slug,
    // The project's first environment has its id.
    environmentId: project.id,
    serviceId: service.id,
    envId: overview.env[0].id,
    variableId: overview.env[0].id,
    appId: service.id,
    databaseId: database.id,
    domainId: domain.id,
    deploymentId: deployment.id,
    backupId: backup.id,
    configurationId: configuration.id,
    targetProjectId: other.id,
    databaseServiceId: database.id,
    storageId: storage.id,
    userId: member.id,
  });
  hookSecret = (await ok(admin('POST', `/api/projects/${project.id}/webhook`), 'webhook')).webhook.secret;
}, 60_000);

afterAll(async () => {
  await server?.dispose();
}, 30_000);

interface Outcome {
  status: number;
  ms: number;
  text: string;
  contentType: string;
}

function send(agent: Agent, base: URL, req: FuzzRequest): Promise<Outcome> {
  const started = Date.now();
  return new Promise((resolve) => {
    const body = req.body === undefined ? undefined : Buffer.isBuffer(req.body) ? req.body : Buffer.from(req.body);
    const outgoing = request(
      {
        agent,
        host: base.hostname,
        port: base.port,
        method: req.method,
        path: req.path,
        headers: { authorization: `Bearer ${server.token}`, ...req.headers, ...(body ? { 'content-length': String(body.length) } : {}) },
        timeout: HANG_MS,
      },
      (res) => {
        const contentType = String(res.headers['content-type'] ?? '');
        // A stream that opened is a success; it would run until the deployment ends.
        if (res.statusCode === 200 && contentType.startsWith('text/event-stream')) {
          res.destroy();
          resolve({ status: 200, ms: Date.now() - started, text: '', contentType });
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, ms: Date.now() - started, text: Buffer.concat(chunks).toString('utf8'), contentType }),
        );
        res.on('error', () => resolve({ status: -1, ms: Date.now() - started, text: 'response error', contentType }));
      },
    );
    outgoing.on('timeout', () => {
      outgoing.destroy();
      resolve({ status: -2, ms: Date.now() - started, text: 'hung', contentType: '' });
    });
    outgoing.on('error', (error) => resolve({ status: -1, ms: Date.now() - started, text: error.message, contentType: '' }));
    outgoing.end(body);
  });
}

function errorShapeProblem(outcome: Outcome): string | null {
  if (!outcome.contentType.startsWith('application/json')) return `content type ${outcome.contentType}`;
  try {
    const body = JSON.parse(outcome.text) as Record<string, unknown>;
    const keys = Object.keys(body).sort().join(',');
    if (keys !== 'details,error,message') return `keys ${keys}`;
    if (typeof body.error !== 'string' || typeof body.message !== 'string' || !body.details || typeof body.details !== 'object')
      return 'types';
    return null;
  } catch {
    return 'not JSON';
  }
}

/** A small seeded generator: the same seed, the same deliveries. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('fuzz of the public webhook endpoint', () => {
  it('broken and forged deliveries from every provider, some signed with the real secret: no 5xx, no hang, JSON answers', async () => {
    const random = prng(SEED);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const values: unknown[] = [
      null,
      0,
      -1,
      1e308,
      '',
      'x'.repeat(5000),
      '../../etc/passwd',
      "'; DROP TABLE services; --",
      [],
      {},
      true,
      '\u0000',
      'refs/heads/main',
      'a'.repeat(40),
    ];
    const shapes = (): unknown => {
      const ref = pick(['refs/heads/main', 'refs/tags/v1', pick(values)]);
      return pick([
        {
          ref,
          after: pick(values),
          repository: pick([{ full_name: 'acme/web', clone_url: pick(values) }, pick(values)]),
          commits: pick([[], [{ added: pick(values) }], pick(values)]),
        },
        {
          object_kind: pick(['push', 'merge_request', pick(values)]),
          ref,
          checkout_sha: pick(values),
          project: pick([{ path_with_namespace: 'acme/web' }, pick(values)]),
        },
        {
          action: pick(['opened', 'closed', 'synchronize', pick(values)]),
          number: pick([1, -3, 2 ** 40, pick(values)]),
          pull_request: pick([{ head: { sha: pick(values), ref: pick(values) }, base: { ref: pick(values) } }, pick(values)]),
        },
        {
          push: { changes: pick([[{ new: { name: pick(values), target: { hash: pick(values) } } }], pick(values)]) },
          repository: pick(values),
        },
        {
          type: pick(['push', 'image.push', pick(values)]),
          data: pick([{ repository: pick(values), branch: pick(values), sha: pick(values) }, pick(values)]),
        },
        { callback_url: 'http://x', push_data: { tag: pick(values) }, repository: { repo_name: pick(values) } },
        pick(values),
      ]);
    };
    const deep = (n: number): string => '['.repeat(n) + ']'.repeat(n);
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    const base = new URL(server.url);
    const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const TOTAL_HOOKS = 800;
    for (let i = 0; i < TOTAL_HOOKS; i++) {
      const payload = shapes();
      let body = pick(['json', 'json', 'json', 'truncated', 'deep', 'binary']) as string;
      const json = JSON.stringify(payload) ?? 'null';
      body =
        body === 'json'
          ? json
          : body === 'truncated'
            ? json.slice(0, Math.floor(json.length / 2))
            : body === 'deep'
              ? deep(5000)
              : String.fromCharCode(...Array.from({ length: 64 }, () => Math.floor(random() * 256)));
      const secret = random() < 0.6 ? hookSecret : 'whsec_not-the-secret';
      const id = `d-${i}-${Math.floor(random() * 5)}`;
      const hmacHex = createHmac('sha256', secret).update(body).digest('hex');
      const timestamp = String(Math.floor(Date.now() / 1000) - pick([0, 0, 400, -400]));
      const standard = createHmac('sha256', Buffer.from(secret.replace(/^whsec_/, ''), 'base64'))
        .update(`${id}.${timestamp}.${body}`)
        .digest('base64');
      const headers: Record<string, string> = pick<Record<string, string>>([
        {
          'x-github-event': pick(['push', 'pull_request', 'ping', 'star', '']),
          'x-github-delivery': id,
          'x-hub-signature-256': pick([`sha256=${hmacHex}`, 'sha256=zz', '']),
        },
        {
          'x-gitlab-event': pick(['Push Hook', 'Merge Request Hook', 'Tag Push Hook']),
          'x-gitlab-token': secret,
          'x-gitlab-event-uuid': id,
        },
        { 'x-gitea-event': pick(['push', 'pull_request']), 'x-gitea-delivery': id, 'x-gitea-signature': pick([hmacHex, 'nothex']) },
        { 'x-forgejo-event': pick(['push', 'pull_request']), 'x-forgejo-delivery': id, 'x-forgejo-signature': hmacHex },
        {
          'x-event-key': pick(['repo:push', 'pullrequest:created', 'pullrequest:fulfilled', 'issue:created']),
          'x-request-uuid': id,
          'x-hub-signature': pick([`sha256=${hmacHex}`, `sha1=${hmacHex}`]),
        },
        {
          'webhook-id': id,
          'webhook-timestamp': pick([timestamp, 'soon', '']),
          'webhook-signature': pick([`v1,${standard}`, 'v1,', `v2,${standard}`, `v1a,${standard} v1,${standard}`]),
        },
        {},
      ]);
      const projectId = random() < 0.9 ? real.projectId! : pick(['nope', 'x'.repeat(64), '%2e%2e', real.serviceId!]);
      const outcome = await send(agent, base, {
        method: 'POST',
        path: `/api/hooks/${projectId}`,
        headers: { ...headers, 'content-type': pick(['application/json', 'text/plain', 'application/x-www-form-urlencoded']) },
        body,
        label: `hooks #${i}`,
      });
      statuses.set(outcome.status, (statuses.get(outcome.status) ?? 0) + 1);
      const label = `#${i} ${JSON.stringify(headers).slice(0, 120)} ${body.slice(0, 80)}`;
      if (outcome.status >= 500 || outcome.status < 0) failures.push(`${label}: ${outcome.status} ${outcome.text.slice(0, 200)}`);
      else if (outcome.status >= 400) {
        const problem = errorShapeProblem(outcome);
        if (problem) failures.push(`${label}: ${outcome.status} ${problem}`);
      } else if (!/"outcome":"(deployed|ignored|duplicate)"/.test(outcome.text))
        failures.push(`${label}: ${outcome.status} ${outcome.text.slice(0, 200)}`);
      if (outcome.text.includes(hookSecret)) failures.push(`${label}: the secret in the answer`);
    }
    agent.destroy();
    console.log(`fuzz hooks: seed ${SEED}, ${TOTAL_HOOKS} deliveries, statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
    expect(failures).toEqual([]);
    expect(server.output()).not.toMatch(/\n\s+at .+\(.+:\d+:\d+\)/);
    expect(server.output()).not.toContain(hookSecret);
  }, 300_000);
});

describe('fuzz', () => {
  it(`${TOTAL} broken requests across every operation: no 5xx, no hang, JSON errors, no stack trace`, async () => {
    const doc = await ok(api(server.url, undefined)('GET', '/api/openapi.json'), 'document');
    const operations = operationsOf(doc);
    expect(operations.length).toBeGreaterThan(20);
    console.log(`fuzz: seed ${SEED} (replay with FUZZ_SEED=${SEED}), ${TOTAL} requests over ${operations.length} operations`);
    // Generated up front, in order, so a seed always gives the same requests whatever the timing.
    const requests = Array.from({ length: TOTAL }, (_, i) => {
      const op = operations[i % operations.length]!;
      const safeReal: Record<string, string> =
        op.method === 'DELETE' ? { projectId: '', serviceId: '', appId: '', databaseId: '', environmentId: '', storageId: '', id: '' } : {};
      // A move takes a database: past the not-a-database check to the server's.
      const databaseReal: Record<string, string> =
        op.path.includes('/database/') || op.path.endsWith('/move') ? { serviceId: real.databaseServiceId! } : {};
      const serverReal: Record<string, string> = op.path.startsWith('/api/servers/') ? { id: real.serverId! } : {};
      return {
        op: `${op.method} ${op.path}`,
        req: new Fuzzer(SEED + i, doc, { ...real, ...databaseReal, ...serverReal, ...safeReal }).request(op),
      };
    });
    const paths = (doc as { paths: Record<string, Record<string, { responses?: Record<string, unknown> }>> }).paths;
    const documentsUpstream = (op: string) => {
      const [method, path] = op.split(' ') as [string, string];
      return paths[path]?.[method.toLowerCase()]?.responses?.['502'] !== undefined;
    };
    const upstreamAnswer = (op: string, outcome: Outcome) =>
      outcome.status === 502 &&
      documentsUpstream(op) &&
      errorShapeProblem(outcome) === null &&
      JSON.parse(outcome.text).error === 'upstream_error';

    const base = new URL(server.url);
    const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    const perOperation = new Map<string, number>();
    let slowest = 0;
    let closedEarly = 0;
    let next = 0;
    const started = Date.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < requests.length) {
          const { op, req } = requests[next++]!;
          const outcome = await send(agent, base, req);
          statuses.set(outcome.status, (statuses.get(outcome.status) ?? 0) + 1);
          perOperation.set(op, (perOperation.get(op) ?? 0) + 1);
          slowest = Math.max(slowest, outcome.ms);
          const label = `${req.method} ${req.path.slice(0, 200)} [${req.label}]`;
          // Past the body limit the server answers 413 and closes without reading on; a client still writing may see the close first.
          if (outcome.status === -1 && req.label === 'too large' && /EPIPE|ECONNRESET/.test(outcome.text)) closedEarly++;
          else if (outcome.status < 0) failures.push(`${label}: ${outcome.text} after ${outcome.ms} ms`);
          else if (outcome.status >= 500 && !upstreamAnswer(op, outcome))
            failures.push(`${label}: ${outcome.status} ${outcome.text.slice(0, 300)}`);
          else if (outcome.ms > HANG_MS) failures.push(`${label}: took ${outcome.ms} ms`);
          else if (outcome.status >= 400) {
            const problem = errorShapeProblem(outcome);
            if (problem) failures.push(`${label}: ${outcome.status} ${problem}: ${outcome.text.slice(0, 200)}`);
          }
        }
      }),
    );
    agent.destroy();
    const seconds = (Date.now() - started) / 1000;
    console.log(
      `fuzz: seed ${SEED}, ${requests.length} requests in ${seconds.toFixed(1)} s, slowest ${slowest} ms, ${closedEarly} oversized uploads cut by the 413 close, statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`,
    );
    expect(failures.slice(0, 20), `seed ${SEED}: ${failures.length} failures`).toEqual([]);
    expect(requests.length).toBeGreaterThanOrEqual(10_000 * Math.min(1, TOTAL / 10_400));
    for (const op of operations) expect(perOperation.get(`${op.method} ${op.path}`) ?? 0, op.path).toBeGreaterThan(0);
    // Deep code was reached: real ids gave successes, not only refusals.
    expect([...statuses].filter(([s]) => s >= 200 && s < 300).reduce((n, [, c]) => n + c, 0)).toBeGreaterThan(100);

    // Alive, answering, and no stack trace or internal error in what it printed.
    expect(server.child.exitCode).toBeNull();
    expect((await api(server.url, undefined)('GET', '/api/health')).status).toBe(200);
    const output = server.output();
    expect(output).not.toMatch(/\n\s+at\s+\S|\bat\s+\S+\s+\(\S+:\d+:\d+\)/);
    expect(output).not.toContain('internal error');
  }, 300_000);
});
