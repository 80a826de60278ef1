import { generateKeyPairSync, sign } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectErrorShape, expectNoLeaks } from '../helpers/error-bodies.js';
import { ok, openStream, type ApiResponse } from '../helpers/http.js';
import { ownPortRange } from '../helpers/docker.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { OpenAiStandin } from '../standins/ai-standins.js';
import { appRouter } from '../../routers/app.router.js';
import { proceduresOf } from '../../routers/trpc.js';
import { SCOPES, type ProcedureScope, type Scope } from '../../src/index.js';

/*
 * Every documented REST endpoint (plus the two SSE paths) against every kind of caller, over real
 * HTTP against the server started as `npm start` starts it.
 *
 *   none     no Authorization header                      -> 401
 *   unknown  a bearer token the server never issued       -> 401
 *   read     read key, all projects                       -> 2xx on reads, 403 on writes
 *   write    write key, all projects                      -> 2xx
 *   other    write key scoped to project B only; every
 *            addressed resource lives in project A        -> 404 (what a key may not see does not
 *            exist for it), 403 for all-project operations
 *
 * Each row prepares its own target per call when the call would change state, so rows (and
 * callers within a row) do not depend on each other. Refused calls are checked to have changed
 * nothing.
 */

/*
 * And the callers of accounts (docs/accounts.md):
 *
 *   owner      the owner's session                        -> 2xx everywhere
 *   member     a member's session                         -> 2xx, 403 on `admin` operations
 *   ended      a session that was logged out (expired)    -> 401
 *   revoked    a personal token that was deleted          -> 401
 *   pat:<s>    the owner's personal token with scope s    -> 2xx where the operation's scope is s
 *              only (admin: everywhere)                      (or s is admin), else 403 insufficient_scope
 *
 * `session` operations (the account's own) take a session only: 403 for keys and tokens. Public
 * ones (signup, signin, password reset) answer every caller alike.
 */
type Caller = 'none' | 'unknown' | 'read' | 'write' | 'other' | 'owner' | 'member' | 'ended' | 'revoked' | `pat:${Scope}`;
const CALLERS: readonly Caller[] = [
  'none',
  'unknown',
  'read',
  'write',
  'other',
  'owner',
  'member',
  'ended',
  'revoked',
  ...SCOPES.map((scope) => `pat:${scope}` as const),
];

/** Each operation's declared scope, `METHOD /path/{param}` to scope, as the procedures declare it. */
const SCOPE_OF = new Map<string, ProcedureScope | undefined>(
  proceduresOf(appRouter).flatMap(({ meta }) => [
    ...(meta.openapi ? [[`${meta.openapi.method} ${meta.openapi.path}`, meta.scope] as const] : []),
    ...(meta.sse ? [[`GET ${meta.sse.path}`, meta.scope] as const] : []),
    ...(meta.download ? [[`GET ${meta.download.path}`, meta.scope] as const] : []),
  ]),
);

/** The server trusts this pair's public key for licenses (LICENSE_PUBLIC_KEY), so the license row can succeed. */
const license = generateKeyPairSync('ed25519');
function licenseKey(): string {
  const bytes = Buffer.from(
    JSON.stringify({ licensee: 'Matrix', plan: 'test', expiresAt: new Date(Date.now() + 86_400_000).toISOString() }),
  );
  return `${bytes.toString('base64url')}.${sign(null, bytes, license.privateKey).toString('base64url')}`;
}

/** Every error body this file saw, checked at the end for leaks. */
const errorBodies: Array<{ label: string; status: number; text: string }> = [];

function expectErrorBody(res: ApiResponse, status: number, label: string): void {
  errorBodies.push({ label, status, text: res.text });
  expectErrorShape(res, status, label);
}

/** A resource out of the key's scope: the 404 of an unknown one, naming none of the ids the key cannot see. */
function expectHidden(res: ApiResponse, label: string, unseen: string[]): void {
  expectErrorBody(res, 404, label);
  for (const id of unseen) expect(res.text, label).not.toContain(id);
}

interface Project {
  id: string;
  slug: string;
  name: string;
}

interface Fixtures {
  A: Project;
  B: Project;
  /** Repository service "acme/web" in A. */
  webId: string;
  /** Postgres database service in A. */
  dbId: string;
  /** Environment `staging` of A, holding a service `web` of its own. */
  stagingId: string;
  /** A storage instance in A (never deployed here). */
  storageId: string;
  /** Env var GREETING of web. */
  envId: string;
  /** A domain of web. */
  domainId: string;
  /** A queued deployment of web. */
  deploymentId: string;
  /** A failed backup of db (its database is not running). */
  backupId: string;
  /** A backup configuration of db. */
  configurationId: string;
  /** The host: the first server. */
  localServerId: string;
  tokens: Record<Caller, string | undefined>;
  /** The member's credentials, for rows that sign in afresh. */
  member: { email: string; password: string; id: string };
  owner: { email: string; password: string };
}

let server: ServerProcess;
/** The AI provider `gpt` is connected to this stand-in, so diagnostics succeed for allowed callers. */
let openai: OpenAiStandin;
let admin: ReturnType<typeof api>;
let f: Fixtures;
let seq = 0;
const uniq = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++seq}`;

// Targets made with the bootstrap key: the fixtures of beforeAll, and fresh ones per call.
async function createProject(name: string, description: string, label: string): Promise<Project> {
  return (await ok<{ project: Project }>(admin('POST', '/api/projects', { name, description }), label)).project;
}
async function createService(
  projectId: string,
  body: Record<string, unknown>,
  label: string,
): Promise<{ id: string; projectId: string; branch: string }> {
  return (await ok(admin('POST', `/api/projects/${projectId}/services`, body), label)).service;
}
async function overview(serviceId: string): Promise<any> {
  return ok(admin('GET', `/api/services/${serviceId}/overview`), 'overview');
}
/** Sets an env var and returns it as the overview lists it. */
async function addEnv(serviceId: string, key: string, value: string): Promise<{ id: string; key: string }> {
  await ok(admin('POST', `/api/services/${serviceId}/env`, { key, value }), 'env');
  const env = (await overview(serviceId)).env as Array<{ id: string; key: string }>;
  return env.find((e) => e.key === key)!;
}
/** Adds a domain and returns it as the overview lists it. */
async function addDomain(serviceId: string, hostname: string): Promise<{ id: string; hostname: string }> {
  await ok(admin('POST', `/api/services/${serviceId}/domains`, { hostname }), 'domain');
  const domains = (await overview(serviceId)).domains as Array<{ id: string; hostname: string }>;
  return domains.find((d) => d.hostname === hostname)!;
}

async function freshProject(): Promise<Project> {
  return createProject(uniq('proj'), 'matrix', 'project');
}
/** An environment of its own project: rows that make environments would pass a project's limit in A. */
async function freshEnvironment(): Promise<{ id: string; name: string; projectId: string }> {
  const project = await freshProject();
  return (await ok(admin('POST', `/api/projects/${project.id}/environments`, { name: 'staging' }), 'environment')).environment;
}
async function environmentNames(projectId: string): Promise<string[]> {
  return ((await ok(admin('GET', `/api/projects/${projectId}/environments`), 'environments')).environments as Array<{ name: string }>).map(
    (e) => e.name,
  );
}
async function freshService(projectId = f.A.id): Promise<{ id: string; projectId: string; branch: string }> {
  return createService(projectId, { name: uniq('svc'), repoFullName: 'acme/web' }, 'service');
}
async function freshEnv(): Promise<{ id: string; key: string }> {
  return addEnv(f.webId, `MATRIX_${++seq}`, 'v');
}
async function freshDomain(): Promise<{ id: string; hostname: string }> {
  return addDomain(f.webId, `${uniq('d')}.matrix.test`);
}
async function freshDeployment(serviceId = f.webId): Promise<{ id: string }> {
  return (await ok(admin('POST', `/api/services/${serviceId}/deployments`), 'deployment')).deployment;
}
async function backupIds(): Promise<string[]> {
  return ((await ok(admin('GET', `/api/services/${f.dbId}/database/backups`), 'backups')).backups as Array<{ id: string }>).map(
    (b) => b.id,
  );
}
/** A backup of db that has ended (failed: no container runs here). */
async function freshBackup(): Promise<string> {
  const { backup } = await ok(admin('POST', `/api/services/${f.dbId}/database/backups`, { storage: 'disk' }), 'backup');
  for (let i = 0; i < 200; i++) {
    const { backups } = await ok(admin('GET', `/api/services/${f.dbId}/database/backups`), 'backups');
    if (backups.find((b: { id: string; status: string }) => b.id === backup.id)?.status !== 'running') return backup.id;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`backup ${backup.id} did not end`);
}
async function freshPostgres(): Promise<{ id: string }> {
  return createService(f.A.id, { name: uniq('pg'), repoUrl: 'database', repoFullName: 'database:postgres' }, 'postgres');
}
async function freshConfiguration(serviceId = f.dbId): Promise<{ id: string }> {
  return (await ok(admin('POST', '/api/backups', { serviceId, schedule: `${++seq % 60} 3 * * *` }), 'configuration')).configuration;
}
async function configurationIds(serviceId?: string): Promise<string[]> {
  const query = serviceId ? `?serviceId=${serviceId}` : '';
  return ((await ok(admin('GET', `/api/backups${query}`), 'configurations')).configurations as Array<{ id: string }>).map((c) => c.id);
}
async function recordIds(configurationId: string): Promise<string[]> {
  return ((await ok(admin('GET', `/api/backups/${configurationId}/records`), 'records')).records as Array<{ id: string }>).map((b) => b.id);
}
async function freshDatabase(): Promise<{ id: string }> {
  return (await ok(admin('POST', '/api/databases', { projectId: f.A.id, name: uniq('db'), engine: 'redis' }), 'database')).database;
}
async function freshStorage(): Promise<{ id: string }> {
  return (await ok(admin('POST', '/api/storage', { projectId: f.A.id, name: uniq('files') }), 'storage')).storage;
}
async function sharedEnv(projectId: string): Promise<Record<string, { value: string }>> {
  return (await ok(admin('GET', `/api/projects/${projectId}/env`), 'shared env')).env;
}
/** A webhook channel to a closed loopback port: saved (unreachable targets are), its test send answers the reason. */
const CLOSED_TARGET = 'http://127.0.0.1:9/slipway-matrix';
async function freshChannel(): Promise<{ id: string; name: string }> {
  return (
    await ok(
      admin('POST', '/api/notifications/channels', { type: 'webhook', name: uniq('hook'), config: { url: CLOSED_TARGET } }),
      'channel',
    )
  ).channel;
}
async function freshRule(): Promise<{ id: string }> {
  const channel = await freshChannel();
  return (
    await ok(admin('POST', '/api/notifications/rules', { projectId: f.A.id, events: ['deployment.*'], channelIds: [channel.id] }), 'rule')
  ).rule;
}
const channelNames = async (): Promise<string[]> =>
  (await ok(admin('GET', '/api/notifications/channels'), 'channels')).channels.map((c: { name: string }) => c.name);
const ruleIds = async (): Promise<string[]> =>
  (await ok(admin('GET', '/api/notifications/rules'), 'rules')).rules.map((r: { id: string }) => r.id);

async function freshKey(): Promise<{ id: string }> {
  return (await ok(admin('POST', '/api/api-keys', { name: uniq('key'), access: 'read' }), 'key')).apiKey;
}
async function mintKey(access: 'read' | 'write', projectIds?: string[]): Promise<string> {
  return (await ok(admin('POST', '/api/api-keys', { name: uniq(`key-${access}`), access, ...(projectIds ? { projectIds } : {}) }), 'key'))
    .token;
}

interface Prepared {
  path: string;
  body?: unknown;
  /** After a refused call: asserts the target is as it was. */
  unchanged?: () => Promise<void>;
}

interface Row {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** As documented (OpenAPI path template). */
  template: string;
  /**
   * read: read key allowed. write: write key, project scope. admin: write key for all projects (api
   * keys, creating projects). session: a signed-in user only. public: anyone, alike. install-read: the
   * install's own state (servers, the registry): all-project keys, read ones too; project-scoped keys 403.
   */
  access: 'read' | 'write' | 'admin' | 'session' | 'public' | 'install-read';
  /** The member's status where it differs from `success` (another user's token: 404). */
  memberStatus?: number;
  /** Session callers sign in afresh for each call (logout ends the session it is called with). */
  freshSession?: boolean;
  /**
   * 400 only where an allowed caller passes every access check and then meets a missing setting;
   * 409 where it reaches a database that is not running (this matrix runs no containers); 404 where
   * what it asks for cannot exist without one (an import's log, the CA before any deployment).
   */
  success: 200 | 201 | 400 | 401 | 403 | 404 | 409 | 422;
  sse?: boolean;
  /** A successful answer's content type, where it is not JSON (a download). */
  contentType?: RegExp;
  /** For the key scoped to project B: 404 for project A's resources (default; 403 on admin rows) or a 200 that shows only B. */
  other?: 'hidden' | 'list-only-own';
  prepare: () => Promise<Prepared>;
  /** Extra checks on a successful answer. */
  check?: (res: ApiResponse, caller: Caller) => void | Promise<void>;
}

/** Project A's webhook, made once (making it again would rotate its secret). */
let webhookA: Promise<unknown> | null = null;
function webhookOfA(): Promise<unknown> {
  webhookA ??= ok(admin('POST', `/api/projects/${f.A.id}/webhook`), 'webhook');
  return webhookA;
}

const rows: Row[] = [
  // Projects
  {
    method: 'GET',
    template: '/api/projects',
    access: 'read',
    success: 200,
    other: 'list-only-own',
    prepare: async () => ({ path: '/api/projects' }),
    check: (res, caller) => {
      const ids = (res.json.projects as Project[]).map((p) => p.id);
      if (caller === 'other') expect(ids).toEqual([f.B.id]);
      else expect(ids).toEqual(expect.arrayContaining([f.A.id, f.B.id]));
    },
  },
  {
    method: 'POST',
    template: '/api/projects',
    access: 'admin',
    success: 201,
    prepare: async () => {
      const name = uniq('created');
      return {
        path: '/api/projects',
        body: { name, description: 'from the matrix' },
        unchanged: async () => {
          const { projects } = await ok<{ projects: Project[] }>(admin('GET', '/api/projects'), 'list');
          expect(projects.map((p) => p.name)).not.toContain(name);
        },
      };
    },
    check: (res) => {
      expect(res.json.project).toMatchObject({ status: 'idle', serviceCount: 0, services: [] });
    },
  },
  {
    method: 'GET',
    template: '/api/projects/{projectSlug}',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/projects/${f.A.slug}` }),
    check: (res) => expect(res.json.project.id).toBe(f.A.id),
  },
  {
    method: 'PATCH',
    template: '/api/projects/{projectId}',
    access: 'write',
    success: 200,
    prepare: async () => {
      const project = await freshProject();
      return {
        path: `/api/projects/${project.id}`,
        body: { name: 'renamed', description: 'changed' },
        unchanged: async () => {
          const got = await ok(admin('GET', `/api/projects/${project.slug}`), 'get');
          expect(got.project.name).toBe(project.name);
        },
      };
    },
    check: (res) => expect(res.json.project).toMatchObject({ name: 'renamed', description: 'changed' }),
  },
  {
    method: 'DELETE',
    template: '/api/projects/{projectId}',
    access: 'write',
    success: 200,
    prepare: async () => {
      const project = await freshProject();
      return {
        path: `/api/projects/${project.id}`,
        unchanged: async () => {
          expect((await admin('GET', `/api/projects/${project.slug}`)).status).toBe(200);
        },
      };
    },
    check: (res) => {
      expect(res.json.ok).toBe(true);
      expect(res.json.proxy).toMatchObject({ ok: expect.any(Boolean), detail: expect.any(String) });
    },
  },
  {
    method: 'GET',
    template: '/api/projects/{projectId}/database-variable-suggestions',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/projects/${f.A.id}/database-variable-suggestions` }),
    check: (res) => expect(res.json.suggestions.length).toBeGreaterThanOrEqual(1),
  },

  // Push to deploy: the project webhook, its deliveries, the previews
  {
    method: 'POST',
    template: '/api/projects/{projectId}/webhook',
    access: 'write',
    success: 200,
    prepare: async () => {
      const project = await freshProject();
      return {
        path: `/api/projects/${project.id}/webhook`,
        unchanged: async () => expect((await admin('GET', `/api/projects/${project.id}/webhook`)).status).toBe(404),
      };
    },
    check: (res) => {
      expect(res.json.webhook).toMatchObject({
        url: expect.stringMatching(/\/api\/hooks\/[a-z0-9]+$/),
        secret: expect.stringMatching(/^whsec_/),
      });
    },
  },
  {
    method: 'GET',
    template: '/api/projects/{projectId}/webhook',
    access: 'read',
    success: 200,
    prepare: async () => {
      await webhookOfA();
      return { path: `/api/projects/${f.A.id}/webhook` };
    },
    check: (res) => {
      expect(res.json.webhook.url).toContain(`/api/hooks/${f.A.id}`);
      expect(res.json.webhook.secret).toBeUndefined();
    },
  },
  {
    method: 'GET',
    template: '/api/projects/{projectId}/webhook/deliveries',
    access: 'read',
    success: 200,
    prepare: async () => {
      await webhookOfA();
      return { path: `/api/projects/${f.A.id}/webhook/deliveries` };
    },
    check: (res) => expect(Array.isArray(res.json.deliveries)).toBe(true),
  },
  {
    method: 'GET',
    template: '/api/projects/{projectId}/previews',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/projects/${f.A.id}/previews` }),
    check: (res) => expect(res.json.previews).toEqual([]),
  },

  // Environments
  {
    method: 'GET',
    template: '/api/projects/{projectId}/environments',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/projects/${f.A.id}/environments` }),
    check: (res) => {
      expect(res.json.environments.map((e: { name: string }) => e.name)).toEqual(['production', 'staging']);
      expect(res.json.environments[0]).toMatchObject({ id: f.A.id, isDefault: true });
    },
  },
  {
    method: 'POST',
    template: '/api/projects/{projectId}/environments',
    access: 'write',
    success: 201,
    prepare: async () => {
      const project = await freshProject();
      return {
        path: `/api/projects/${project.id}/environments`,
        body: { name: 'preview' },
        unchanged: async () => expect(await environmentNames(project.id)).toEqual(['production']),
      };
    },
    check: (res) => expect(res.json.environment).toMatchObject({ name: 'preview', isDefault: false, serviceCount: 0 }),
  },
  {
    method: 'GET',
    template: '/api/environments/{environmentId}',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/environments/${f.stagingId}` }),
    check: (res) => expect(res.json.environment).toMatchObject({ id: f.stagingId, projectId: f.A.id, name: 'staging', serviceCount: 1 }),
  },
  {
    method: 'PATCH',
    template: '/api/environments/{environmentId}',
    access: 'write',
    success: 200,
    prepare: async () => {
      const environment = await freshEnvironment();
      return {
        path: `/api/environments/${environment.id}`,
        body: { name: 'qa' },
        unchanged: async () => expect(await environmentNames(environment.projectId)).toEqual(['production', 'staging']),
      };
    },
    check: (res) => {
      expect(res.json.environment.name).toBe('qa');
      expect(res.json.proxy).toMatchObject({ ok: expect.any(Boolean), detail: expect.any(String) });
    },
  },
  {
    method: 'DELETE',
    template: '/api/environments/{environmentId}',
    access: 'write',
    success: 200,
    prepare: async () => {
      const environment = await freshEnvironment();
      return {
        path: `/api/environments/${environment.id}`,
        unchanged: async () => expect(await environmentNames(environment.projectId)).toEqual(['production', 'staging']),
      };
    },
    check: (res) => expect(res.json).toMatchObject({ ok: true, proxy: expect.any(Object) }),
  },
  {
    method: 'POST',
    template: '/api/environments/{environmentId}/clone',
    access: 'write',
    success: 201,
    prepare: async () => {
      const environment = await freshEnvironment();
      await ok(admin('POST', `/api/environments/${environment.id}/apps`, { name: 'web', repoFullName: 'acme/web' }), 'app');
      return {
        path: `/api/environments/${environment.id}/clone`,
        body: { name: 'preview' },
        unchanged: async () => expect(await environmentNames(environment.projectId)).toEqual(['production', 'staging']),
      };
    },
    check: (res) => {
      expect(res.json.environment).toMatchObject({ name: 'preview', serviceCount: 1 });
      expect(res.json.services).toEqual([expect.objectContaining({ slug: 'web', environmentId: res.json.environment.id, status: 'idle' })]);
    },
  },
  {
    method: 'GET',
    template: '/api/environments/{environmentId}/apps',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/environments/${f.stagingId}/apps` }),
    check: (res) => expect(res.json.services).toEqual([expect.objectContaining({ slug: 'web', environmentId: f.stagingId })]),
  },
  {
    method: 'POST',
    template: '/api/environments/{environmentId}/apps',
    access: 'write',
    success: 201,
    prepare: async () => {
      const environment = await freshEnvironment();
      return {
        path: `/api/environments/${environment.id}/apps`,
        body: { name: 'api', repoFullName: 'acme/api' },
        unchanged: async () => expect((await ok(admin('GET', `/api/environments/${environment.id}/apps`), 'apps')).services).toEqual([]),
      };
    },
    check: (res) => expect(res.json.service).toMatchObject({ slug: 'api', repoFullName: 'acme/api', status: 'idle' }),
  },

  // Services
  {
    method: 'POST',
    template: '/api/projects/{projectId}/services',
    access: 'write',
    success: 201,
    prepare: async () => {
      const name = uniq('new-svc');
      return {
        path: `/api/projects/${f.A.id}/services`,
        body: { name, repoFullName: 'acme/web' },
        unchanged: async () => {
          const got = await ok(admin('GET', `/api/projects/${f.A.slug}`), 'get');
          expect((got.project.services as Array<{ name: string }>).map((s) => s.name)).not.toContain(name);
        },
      };
    },
    check: (res) => expect(res.json.service).toMatchObject({ projectId: f.A.id, repoFullName: 'acme/web', status: 'idle' }),
  },
  {
    method: 'GET',
    template: '/api/services/{serviceId}/overview',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/services/${f.webId}/overview` }),
    check: (res, caller) => {
      expect(res.json.service.id).toBe(f.webId);
      expect(res.json.env.map((e: { id: string }) => e.id)).toContain(f.envId);
      // Values only with env:read: a project:read token sees the keys, never the values.
      const greeting = res.json.env.find((e: { id: string }) => e.id === f.envId);
      expect(greeting.value).toBe(caller === 'pat:project:read' ? '' : 'hello');
      expect(res.json.domains.map((d: { id: string }) => d.id)).toContain(f.domainId);
      expect(res.json.deployments.map((d: { id: string }) => d.id)).toContain(f.deploymentId);
    },
  },
  {
    method: 'PATCH',
    template: '/api/services/{serviceId}',
    access: 'write',
    success: 200,
    prepare: async () => {
      const service = await freshService();
      return {
        path: `/api/services/${service.id}`,
        body: { branch: 'develop' },
        unchanged: async () => expect((await overview(service.id)).service.branch).toBe(service.branch),
      };
    },
    check: (res) => expect(res.json.service.branch).toBe('develop'),
  },
  {
    method: 'POST',
    template: '/api/services/{serviceId}/transfer',
    access: 'write',
    success: 200,
    prepare: async () => {
      const service = await freshService();
      return {
        path: `/api/services/${service.id}/transfer`,
        body: { targetProjectId: f.B.id },
        unchanged: async () => expect((await overview(service.id)).service.projectId).toBe(f.A.id),
      };
    },
    check: (res) => {
      expect(res.json.service.projectId).toBe(f.B.id);
      expect(res.json.project.id).toBe(f.B.id);
      expect(res.json.proxy).toBeTypeOf('object');
    },
  },
  // The database is on the host already: an allowed caller ends at the 409 `same_server`, and nothing moves.
  {
    method: 'POST',
    template: '/api/services/{serviceId}/move',
    access: 'write',
    success: 409,
    prepare: async () => ({
      path: `/api/services/${f.dbId}/move`,
      body: { serverId: f.localServerId },
      unchanged: async () => expect((await overview(f.dbId)).service.server.id).toBe(f.localServerId),
    }),
    check: (res) => expect(res.json.details).toMatchObject({ reason: 'same_server', serverId: f.localServerId }),
  },
  {
    method: 'DELETE',
    template: '/api/services/{serviceId}',
    access: 'write',
    success: 200,
    prepare: async () => {
      const service = await freshService();
      return {
        path: `/api/services/${service.id}`,
        unchanged: async () => expect((await admin('GET', `/api/services/${service.id}/overview`)).status).toBe(200),
      };
    },
    check: (res) => expect(res.json).toMatchObject({ ok: true, proxy: expect.any(Object) }),
  },
  {
    method: 'GET',
    template: '/api/services/{serviceId}/suggestion-keys',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/services/${f.dbId}/suggestion-keys` }),
    check: (res) => {
      expect(res.json.suggestions.map((s: { key: string }) => s.key)).toContain('hostPort');
      expect(Array.isArray(res.json.databaseVariables)).toBe(true);
    },
  },

  // Environment variables
  {
    method: 'POST',
    template: '/api/services/{serviceId}/env',
    access: 'write',
    success: 200,
    prepare: async () => {
      const key = `SET_${++seq}`;
      return {
        path: `/api/services/${f.webId}/env`,
        body: { key, value: 'x' },
        unchanged: async () => expect((await overview(f.webId)).env.map((e: { key: string }) => e.key)).not.toContain(key),
      };
    },
    check: (res) => expect(res.json).toEqual({ ok: true }),
  },
  {
    method: 'DELETE',
    template: '/api/services/{serviceId}/env/{envId}',
    access: 'write',
    success: 200,
    prepare: async () => {
      const env = await freshEnv();
      return {
        path: `/api/services/${f.webId}/env/${env.id}`,
        unchanged: async () => expect((await overview(f.webId)).env.map((e: { id: string }) => e.id)).toContain(env.id),
      };
    },
    check: (res) => expect(res.json).toEqual({ ok: true }),
  },
  {
    method: 'POST',
    template: '/api/services/{serviceId}/env/{envId}/reveal',
    access: 'write',
    success: 200,
    prepare: async () => ({ path: `/api/services/${f.webId}/env/${f.envId}/reveal` }),
    check: (res) => expect(res.json).toMatchObject({ key: 'GREETING', value: 'hello' }),
  },

  // Domains
  {
    method: 'POST',
    template: '/api/services/{serviceId}/domains',
    access: 'write',
    success: 201,
    prepare: async () => {
      const hostname = `${uniq('new')}.matrix.test`;
      return {
        path: `/api/services/${f.webId}/domains`,
        body: { hostname },
        unchanged: async () =>
          expect((await overview(f.webId)).domains.map((d: { hostname: string }) => d.hostname)).not.toContain(hostname),
      };
    },
    check: (res) => expect(res.json).toMatchObject({ ok: true, proxy: expect.any(Object) }),
  },
  {
    method: 'PATCH',
    template: '/api/services/{serviceId}/domains/{domainId}',
    access: 'write',
    success: 200,
    prepare: async () => {
      const domain = await freshDomain();
      return {
        path: `/api/services/${f.webId}/domains/${domain.id}`,
        body: { hostname: `${uniq('moved')}.matrix.test` },
        unchanged: async () => {
          const now = (await overview(f.webId)).domains.find((d: { id: string }) => d.id === domain.id);
          expect(now?.hostname).toBe(domain.hostname);
        },
      };
    },
    check: (res) => expect(res.json).toMatchObject({ ok: true, proxy: expect.any(Object) }),
  },
  {
    method: 'DELETE',
    template: '/api/services/{serviceId}/domains/{domainId}',
    access: 'write',
    success: 200,
    prepare: async () => {
      const domain = await freshDomain();
      return {
        path: `/api/services/${f.webId}/domains/${domain.id}`,
        unchanged: async () => expect((await overview(f.webId)).domains.map((d: { id: string }) => d.id)).toContain(domain.id),
      };
    },
    check: (res) => expect(res.json).toMatchObject({ ok: true, proxy: expect.any(Object) }),
  },

  // Deployments
  {
    method: 'POST',
    template: '/api/services/{serviceId}/deployments',
    access: 'write',
    success: 201,
    prepare: async () => {
      const service = await freshService();
      return {
        path: `/api/services/${service.id}/deployments`,
        unchanged: async () => expect((await overview(service.id)).deployments).toEqual([]),
      };
    },
    check: (res) =>
      expect(res.json.deployment).toMatchObject({
        status: 'queued',
        trigger: 'manual',
        commitSha: null,
        imageTag: null,
        containerName: null,
        startedAt: null,
        finishedAt: null,
      }),
  },
  {
    method: 'GET',
    template: '/api/services/{serviceId}/deployments',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/services/${f.webId}/deployments` }),
    check: (res) => expect(res.json.deployments.map((d: { id: string }) => d.id)).toContain(f.deploymentId),
  },
  {
    method: 'GET',
    template: '/api/deployments/{deploymentId}',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/deployments/${f.deploymentId}` }),
    check: (res) => expect(res.json.deployment.id).toBe(f.deploymentId),
  },
  {
    method: 'POST',
    template: '/api/deployments/{deploymentId}/abort',
    access: 'write',
    success: 200,
    prepare: async () => {
      const deployment = await freshDeployment();
      return {
        path: `/api/deployments/${deployment.id}/abort`,
        unchanged: async () =>
          expect((await ok(admin('GET', `/api/deployments/${deployment.id}`), 'get')).deployment.status).toBe('queued'),
      };
    },
    check: (res) => expect(res.json).toEqual({ accepted: true }),
  },
  {
    method: 'GET',
    template: '/api/services/{serviceId}/metrics',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/services/${f.webId}/metrics` }),
    check: (res) => expect(res.json).toMatchObject({ serviceId: f.webId, running: false, current: null, series: { points: [] } }),
  },
  // AI: the queued deployment did not fail (409); diagnostics take any deployment and ask the stand-in.
  {
    method: 'POST',
    template: '/api/deployments/{deploymentId}/explain-failure',
    access: 'write',
    success: 409,
    prepare: async () => ({ path: `/api/deployments/${f.deploymentId}/explain-failure`, body: { providerId: 'gpt', model: 'gpt-test' } }),
  },
  {
    method: 'POST',
    template: '/api/deployments/{deploymentId}/diagnostics',
    access: 'write',
    success: 200,
    prepare: async () => ({ path: `/api/deployments/${f.deploymentId}/diagnostics`, body: { providerId: 'gpt', model: 'gpt-test' } }),
    check: (res) => expect(res.json.explanation).toEqual(openai.answer),
  },
  // A queued deployment never went live: an allowed caller ends at the 409 of rollback.
  {
    method: 'POST',
    template: '/api/deployments/{deploymentId}/rollback',
    access: 'write',
    success: 409,
    prepare: async () => {
      const deployment = await freshDeployment();
      return {
        path: `/api/deployments/${deployment.id}/rollback`,
        unchanged: async () =>
          expect((await ok(admin('GET', `/api/services/${f.webId}/deployments`), 'list')).deployments[0].id).toBe(deployment.id),
      };
    },
  },
  {
    method: 'GET',
    template: '/api/deployments/{deploymentId}/logs',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/deployments/${f.deploymentId}/logs` }),
    check: (res) => expect(Array.isArray(res.json.logs)).toBe(true),
  },
  {
    method: 'GET',
    template: '/api/deployments/{deploymentId}/stream',
    access: 'read',
    success: 200,
    sse: true,
    prepare: async () => ({ path: `/api/deployments/${f.deploymentId}/stream` }),
  },
  {
    method: 'GET',
    template: '/api/services/{serviceId}/runtime-logs/stream',
    access: 'read',
    success: 200,
    sse: true,
    prepare: async () => ({ path: `/api/services/${f.webId}/runtime-logs/stream` }),
  },

  // DNS records: no provider is connected in this matrix, so an allowed caller gets past
  // authentication, access and scope and ends at the settings check (400).
  {
    method: 'POST',
    template: '/api/services/{serviceId}/domains/{domainId}/dns-records',
    access: 'write',
    success: 400,
    prepare: async () => {
      const domain = await freshDomain();
      return { path: `/api/services/${f.webId}/domains/${domain.id}/dns-records`, body: { providerId: 'cloudflare' } };
    },
    check: (res) => expect(res.json).toMatchObject({ error: 'validation_error', details: { field: 'providerId' } }),
  },

  // Database administration: the matrix runs no containers, so an allowed caller gets past
  // authentication, access and scope and meets the stopped database (409 not_running).
  ...(
    [
      ['GET', '/api/services/{serviceId}/database/tables', 'read', () => ({ path: `/api/services/${f.dbId}/database/tables` })],
      [
        'GET',
        '/api/services/{serviceId}/database/rows',
        'read',
        () => ({ path: `/api/services/${f.dbId}/database/rows?table=public.items` }),
      ],
      [
        'POST',
        '/api/services/{serviceId}/database/query',
        'write',
        () => ({ path: `/api/services/${f.dbId}/database/query`, body: { sql: 'SELECT 1' } }),
      ],
      [
        'POST',
        '/api/services/{serviceId}/database/rows',
        'write',
        () => ({ path: `/api/services/${f.dbId}/database/rows`, body: { table: 'public.items', values: { name: 'x' } } }),
      ],
      [
        'PATCH',
        '/api/services/{serviceId}/database/rows',
        'write',
        () => ({
          path: `/api/services/${f.dbId}/database/rows`,
          body: { table: 'public.items', primaryKey: { id: 1 }, values: { name: 'x' } },
        }),
      ],
      [
        'DELETE',
        '/api/services/{serviceId}/database/rows',
        'write',
        () => ({ path: `/api/services/${f.dbId}/database/rows`, body: { table: 'public.items', primaryKey: { id: 1 } } }),
      ],
    ] as const
  ).map(
    ([method, template, access, prepare]): Row => ({
      method,
      template,
      access,
      success: 409,
      prepare: async () => prepare(),
      check: (res) => expect(res.json).toMatchObject({ error: 'not_running' }),
    }),
  ),

  // Database imports and TLS: no containers run here, so an import is refused as not running, and no
  // deployment has made the CA yet.
  {
    method: 'GET',
    template: '/api/services/{serviceId}/database/imports',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/services/${f.dbId}/database/imports` }),
    check: (res) => expect(res.json).toEqual({ imports: [] }),
  },
  {
    method: 'GET',
    template: '/api/services/{serviceId}/database/imports/{importId}/logs',
    access: 'read',
    success: 404,
    prepare: async () => ({ path: `/api/services/${f.dbId}/database/imports/noimporthere/logs` }),
    check: (res) => expect(res.json).toMatchObject({ error: 'not_found', details: { resource: 'Import' } }),
  },
  {
    method: 'POST',
    template: '/api/services/{serviceId}/database/import/postgres-url',
    access: 'write',
    success: 409,
    prepare: async () => ({
      path: `/api/services/${f.dbId}/database/import/postgres-url`,
      body: { sourceUrl: 'postgres://someone:matrix-secret-pw@source.example.test:5432/app' },
      unchanged: async () => {
        expect((await ok(admin('GET', `/api/services/${f.dbId}/database/imports`), 'imports')).imports).toEqual([]);
      },
    }),
    check: (res) => {
      expect(res.json).toMatchObject({ error: 'not_running' });
      expect(res.text).not.toContain('matrix-secret-pw');
    },
  },
  {
    method: 'POST',
    template: '/api/services/{serviceId}/database/import/redis-url',
    access: 'write',
    success: 400,
    prepare: async () => ({
      path: `/api/services/${f.dbId}/database/import/redis-url`,
      body: { sourceUrl: 'redis://default:matrix-secret-pw@source.example.test:6379' },
    }),
    // A Redis import goes into a Redis service; this one is Postgres.
    check: (res) => expect(res.json).toMatchObject({ error: 'validation_error', details: { field: 'serviceId' } }),
  },
  {
    method: 'GET',
    template: '/api/services/{serviceId}/database/tls',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/services/${f.dbId}/database/tls` }),
    check: (res) => expect(res.json.tls).toMatchObject({ active: false, caCertAvailable: false }),
  },
  {
    method: 'GET',
    template: '/api/services/{serviceId}/database/tls/ca',
    access: 'read',
    success: 404,
    prepare: async () => ({ path: `/api/services/${f.dbId}/database/tls/ca` }),
    check: (res) => expect(res.json).toMatchObject({ error: 'not_found' }),
  },
  // Terminal tickets: the target is checked as the socket would check it; this matrix runs no
  // containers, so an allowed caller meets the service without a running container (409).
  {
    method: 'POST',
    template: '/api/ws/tickets',
    access: 'write',
    success: 409,
    prepare: async () => ({ path: '/api/ws/tickets', body: { target: `/api/ws/services/${f.webId}/terminal` } }),
    check: (res) => expect(res.json).toMatchObject({ error: 'not_running' }),
  },
  // Backups of the database: the database runs no container here, so a backup fails (not running);
  // restore and download of such a backup are 409, after authentication, access and scope.
  {
    method: 'GET',
    template: '/api/services/{serviceId}/database/backups',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/services/${f.dbId}/database/backups` }),
    check: (res) => expect(res.json).toMatchObject({ settings: { serviceId: f.dbId }, objectStore: { connected: false } }),
  },
  {
    method: 'POST',
    template: '/api/services/{serviceId}/database/backups',
    access: 'write',
    success: 201,
    prepare: async () => {
      const before = await backupIds();
      return {
        path: `/api/services/${f.dbId}/database/backups`,
        body: { storage: 'disk' },
        unchanged: async () => expect(await backupIds()).toEqual(before),
      };
    },
    check: (res) => expect(res.json.backup).toMatchObject({ status: 'running', storage: 'disk' }),
  },
  {
    method: 'PUT',
    template: '/api/services/{serviceId}/database/backups/settings',
    access: 'write',
    success: 200,
    prepare: async () => ({ path: `/api/services/${f.dbId}/database/backups/settings`, body: { weeklyEnabled: false } }),
    check: (res) => expect(res.json.settings).toMatchObject({ weeklyEnabled: false }),
  },
  {
    method: 'POST',
    template: '/api/services/{serviceId}/database/backups/{backupId}/restore',
    access: 'write',
    success: 409,
    prepare: async () => ({ path: `/api/services/${f.dbId}/database/backups/${f.backupId}/restore` }),
    check: (res) => expect(res.json.error).toBe('conflict'),
  },
  {
    method: 'POST',
    template: '/api/services/{serviceId}/database/backups/{backupId}/drill',
    access: 'write',
    // A failed backup has no file to drill: 409, after authentication, access and scope.
    success: 409,
    prepare: async () => ({ path: `/api/services/${f.dbId}/database/backups/${f.backupId}/drill` }),
    check: (res) => expect(res.json.error).toBe('conflict'),
  },
  {
    method: 'GET',
    template: '/api/services/{serviceId}/database/pitr',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/services/${f.dbId}/database/pitr` }),
    check: (res) => expect(res.json.pitr).toMatchObject({ serviceId: f.dbId, window: null }),
  },
  {
    method: 'PUT',
    template: '/api/services/{serviceId}/database/pitr',
    access: 'write',
    success: 200,
    prepare: async () => ({ path: `/api/services/${f.dbId}/database/pitr`, body: { enabled: false, retentionDays: 3 } }),
    check: (res) => expect(res.json.pitr).toMatchObject({ enabled: false, retentionDays: 3 }),
  },
  {
    method: 'POST',
    template: '/api/services/{serviceId}/database/pitr/restore',
    access: 'write',
    // Nothing archived: 422 outside_window with the (empty) window, after authentication, access and scope.
    success: 422,
    prepare: async () => ({ path: `/api/services/${f.dbId}/database/pitr/restore`, body: { at: '2026-01-01T00:00:00Z' } }),
    check: (res) => expect(res.json).toMatchObject({ error: 'outside_window', details: { window: null } }),
  },
  {
    method: 'GET',
    template: '/api/services/{serviceId}/database/pitr/restores/{restoreId}/logs',
    access: 'read',
    // No restore was made from it: 404 naming the restore, after authentication, access and scope.
    success: 404,
    prepare: async () => ({ path: `/api/services/${f.dbId}/database/pitr/restores/${'0'.repeat(16)}/logs` }),
    check: (res) => expect(res.json).toMatchObject({ error: 'not_found', details: { resource: 'Point-in-time restore' } }),
  },
  {
    method: 'GET',
    template: '/api/services/{serviceId}/database/backups/{backupId}/download',
    access: 'read',
    success: 409,
    prepare: async () => ({ path: `/api/services/${f.dbId}/database/backups/${f.backupId}/download` }),
  },
  {
    method: 'GET',
    template: '/api/services/{serviceId}/database/backups/{backupId}/logs',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/services/${f.dbId}/database/backups/${f.backupId}/logs` }),
    check: (res) => expect(res.json.logs.length).toBeGreaterThan(0),
  },
  {
    method: 'DELETE',
    template: '/api/services/{serviceId}/database/backups/{backupId}',
    access: 'write',
    success: 200,
    prepare: async () => {
      const id = await freshBackup();
      return {
        path: `/api/services/${f.dbId}/database/backups/${id}`,
        unchanged: async () => expect(await backupIds()).toContain(id),
      };
    },
    check: (res) => expect(res.json).toEqual({ ok: true }),
  },

  // Named volumes of web and their backups: web runs no container here; a backup id it does not have is 404 after every check.
  {
    method: 'GET',
    template: '/api/services/{serviceId}/volumes',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/services/${f.webId}/volumes` }),
    check: (res) => expect(res.json.volumes).toMatchObject([{ name: 'files', mountPath: '/data' }]),
  },
  {
    method: 'GET',
    template: '/api/services/{serviceId}/volumes/{name}/backups',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/services/${f.webId}/volumes/files/backups` }),
    check: (res) => expect(res.json.volume).toMatchObject({ name: 'files' }),
  },
  {
    method: 'POST',
    template: '/api/services/{serviceId}/volumes/{name}/backups',
    access: 'write',
    success: 201,
    prepare: async () => ({ path: `/api/services/${f.webId}/volumes/files/backups`, body: { mode: 'live' } }),
    check: (res) => expect(res.json.backup).toMatchObject({ status: 'running', kind: 'volume', volume: 'files' }),
  },
  ...(['restore', 'drill'] as const).map(
    (action): Row => ({
      method: 'POST',
      template: `/api/services/{serviceId}/volumes/{name}/backups/{backupId}/${action}`,
      access: 'write',
      success: 404,
      prepare: async () => ({ path: `/api/services/${f.webId}/volumes/files/backups/${f.backupId}/${action}` }),
    }),
  ),
  ...(['download', 'logs'] as const).map(
    (action): Row => ({
      method: 'GET',
      template: `/api/services/{serviceId}/volumes/{name}/backups/{backupId}/${action}`,
      access: 'read',
      success: 404,
      prepare: async () => ({ path: `/api/services/${f.webId}/volumes/files/backups/${f.backupId}/${action}` }),
    }),
  ),
  {
    method: 'DELETE',
    template: '/api/services/{serviceId}/volumes/{name}/backups/{backupId}',
    access: 'write',
    success: 404,
    prepare: async () => ({ path: `/api/services/${f.webId}/volumes/files/backups/${f.backupId}` }),
  },

  // Backup configurations (general API): a fresh Postgres service per creation (at most 10 per database);
  // a trigger queues a backup that then fails (no container runs here), as the detailed create does.
  {
    method: 'GET',
    template: '/api/backups',
    access: 'read',
    success: 200,
    other: 'list-only-own',
    prepare: async () => ({ path: '/api/backups' }),
    check: (res, caller) => {
      const ids = (res.json.configurations as Array<{ id: string }>).map((c) => c.id);
      if (caller === 'other') expect(ids).toEqual([]);
      else expect(ids).toContain(f.configurationId);
    },
  },
  {
    method: 'POST',
    template: '/api/backups',
    access: 'write',
    success: 201,
    prepare: async () => {
      const db = await freshPostgres();
      return {
        path: '/api/backups',
        body: { serviceId: db.id, schedule: '0 3 * * *', retention: { count: 3 } },
        unchanged: async () => expect(await configurationIds(db.id)).toEqual([]),
      };
    },
    check: (res) => expect(res.json.configuration).toMatchObject({ schedule: '0 3 * * *', retention: { count: 3 }, managed: null }),
  },
  {
    method: 'GET',
    template: '/api/backups/{configurationId}',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/backups/${f.configurationId}` }),
    check: (res) => expect(res.json.configuration).toMatchObject({ id: f.configurationId, serviceId: f.dbId }),
  },
  {
    method: 'DELETE',
    template: '/api/backups/{configurationId}',
    access: 'write',
    success: 200,
    prepare: async () => {
      const db = await freshPostgres();
      const { id } = await freshConfiguration(db.id);
      return { path: `/api/backups/${id}`, unchanged: async () => expect(await configurationIds(db.id)).toEqual([id]) };
    },
    check: (res) => expect(res.json).toEqual({ ok: true }),
  },
  {
    method: 'POST',
    template: '/api/backups/{configurationId}/trigger',
    access: 'write',
    success: 201,
    prepare: async () => {
      const before = await recordIds(f.configurationId);
      return {
        path: `/api/backups/${f.configurationId}/trigger`,
        unchanged: async () => expect(await recordIds(f.configurationId)).toEqual(before),
      };
    },
    check: (res) => expect(res.json.backup).toMatchObject({ status: 'running', serviceId: f.dbId }),
  },
  {
    method: 'GET',
    template: '/api/backups/{configurationId}/records',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/backups/${f.configurationId}/records` }),
    check: (res) => expect(Array.isArray(res.json.records)).toBe(true),
  },

  // Platform settings: all-project write keys only
  {
    method: 'GET',
    template: '/api/settings',
    access: 'admin',
    success: 200,
    prepare: async () => ({ path: '/api/settings' }),
    check: (res) => expect(res.json.settings).toMatchObject({ dnsProviders: [] }),
  },
  {
    method: 'PUT',
    template: '/api/settings',
    access: 'admin',
    success: 200,
    prepare: async () => ({ path: '/api/settings', body: {} }),
    check: (res) => expect(res.json.settings.publicIp).toBeTypeOf('string'),
  },

  // The general API's doors (docs/general-api.md): the same use cases under other paths.
  {
    method: 'POST',
    template: '/api/projects/{projectId}/deploy',
    access: 'write',
    success: 201,
    prepare: async () => {
      const project = await freshProject();
      const service = await freshService(project.id);
      return {
        path: `/api/projects/${project.id}/deploy`,
        unchanged: async () => expect((await overview(service.id)).deployments).toEqual([]),
      };
    },
    check: (res) => expect(res.json.deployments).toEqual([expect.objectContaining({ status: 'queued' })]),
  },
  {
    method: 'GET',
    template: '/api/projects/{projectId}/env',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/projects/${f.A.id}/env` }),
    check: (res) => expect(res.json.env.SHARED_GREETING).toMatchObject({ value: 'hello', secret: false }),
  },
  {
    method: 'PUT',
    template: '/api/projects/{projectId}/env',
    access: 'write',
    success: 200,
    prepare: async () => {
      const project = await freshProject();
      return {
        path: `/api/projects/${project.id}/env`,
        body: { env: { REGION: 'eu', TOKEN: { value: 'matrix-secret', secret: true } } },
        unchanged: async () => expect(await sharedEnv(project.id)).toEqual({}),
      };
    },
    check: (res) => {
      expect(res.json.env).toMatchObject({ REGION: { value: 'eu', secret: false }, TOKEN: { value: '', secret: true } });
      expect(res.text).not.toContain('matrix-secret');
    },
  },
  {
    method: 'GET',
    template: '/api/projects/{projectId}/domains',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/projects/${f.A.id}/domains` }),
    check: (res) => expect(res.json.domains.map((d: { id: string }) => d.id)).toContain(f.domainId),
  },
  {
    method: 'POST',
    template: '/api/projects/{projectId}/domains',
    access: 'write',
    success: 201,
    prepare: async () => {
      const hostname = `${uniq('pd')}.matrix.test`;
      return {
        path: `/api/projects/${f.A.id}/domains`,
        body: { serviceId: f.webId, hostname },
        unchanged: async () =>
          expect((await overview(f.webId)).domains.map((d: { hostname: string }) => d.hostname)).not.toContain(hostname),
      };
    },
    check: (res) => expect(res.json).toMatchObject({ ok: true, domain: { serviceId: f.webId }, proxy: expect.any(Object) }),
  },
  {
    method: 'DELETE',
    template: '/api/domains/{domainId}',
    access: 'write',
    success: 200,
    prepare: async () => {
      const domain = await freshDomain();
      return {
        path: `/api/domains/${domain.id}`,
        unchanged: async () => expect((await overview(f.webId)).domains.map((d: { id: string }) => d.id)).toContain(domain.id),
      };
    },
    check: (res) => expect(res.json).toMatchObject({ ok: true, proxy: expect.any(Object) }),
  },
  {
    method: 'GET',
    template: '/api/apps/{appId}',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/apps/${f.webId}` }),
    check: (res) => expect(res.json.service.id).toBe(f.webId),
  },
  {
    method: 'PUT',
    template: '/api/apps/{appId}',
    access: 'write',
    success: 200,
    prepare: async () => {
      const service = await freshService();
      return {
        path: `/api/apps/${service.id}`,
        body: { branch: 'develop' },
        unchanged: async () => expect((await overview(service.id)).service.branch).toBe(service.branch),
      };
    },
    check: (res) => expect(res.json.service.branch).toBe('develop'),
  },
  {
    method: 'DELETE',
    template: '/api/apps/{appId}',
    access: 'write',
    success: 200,
    prepare: async () => {
      const service = await freshService();
      return {
        path: `/api/apps/${service.id}`,
        unchanged: async () => expect((await admin('GET', `/api/services/${service.id}/overview`)).status).toBe(200),
      };
    },
    check: (res) => expect(res.json).toMatchObject({ ok: true, proxy: expect.any(Object) }),
  },
  {
    method: 'POST',
    template: '/api/services/{serviceId}/deploy',
    access: 'write',
    success: 201,
    prepare: async () => {
      const service = await freshService();
      return {
        path: `/api/services/${service.id}/deploy`,
        unchanged: async () => expect((await overview(service.id)).deployments).toEqual([]),
      };
    },
    check: (res) => expect(res.json.deployment).toMatchObject({ status: 'queued' }),
  },
  {
    method: 'GET',
    template: '/api/services/{serviceId}/variables',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/services/${f.webId}/variables` }),
    check: (res) => expect(res.json.variables.map((v: { id: string }) => v.id)).toContain(f.envId),
  },
  {
    method: 'POST',
    template: '/api/services/{serviceId}/variables',
    access: 'write',
    success: 201,
    prepare: async () => {
      const key = `VAR_${++seq}`;
      return {
        path: `/api/services/${f.webId}/variables`,
        body: { key, value: 'x' },
        unchanged: async () => expect((await overview(f.webId)).env.map((e: { key: string }) => e.key)).not.toContain(key),
      };
    },
    check: (res) => expect(res.json.variable).toMatchObject({ value: 'x', secret: false }),
  },
  {
    method: 'PUT',
    template: '/api/services/{serviceId}/variables/{variableId}',
    access: 'write',
    success: 200,
    prepare: async () => {
      const env = await freshEnv();
      return {
        path: `/api/services/${f.webId}/variables/${env.id}`,
        body: { value: 'changed' },
        unchanged: async () => expect((await overview(f.webId)).env.find((e: { id: string }) => e.id === env.id).value).toBe('v'),
      };
    },
    check: (res) => expect(res.json.variable).toMatchObject({ value: 'changed' }),
  },
  {
    method: 'DELETE',
    template: '/api/services/{serviceId}/variables/{variableId}',
    access: 'write',
    success: 200,
    prepare: async () => {
      const env = await freshEnv();
      return {
        path: `/api/services/${f.webId}/variables/${env.id}`,
        unchanged: async () => expect((await overview(f.webId)).env.map((e: { id: string }) => e.id)).toContain(env.id),
      };
    },
    check: (res) => expect(res.json).toEqual({ ok: true }),
  },
  {
    method: 'GET',
    template: '/api/databases',
    access: 'read',
    success: 200,
    other: 'list-only-own',
    prepare: async () => ({ path: '/api/databases' }),
    check: (res, caller) => {
      const ids = (res.json.databases as Array<{ id: string }>).map((d) => d.id);
      if (caller === 'other') expect(ids).toEqual([]);
      else expect(ids).toContain(f.dbId);
    },
  },
  {
    method: 'POST',
    template: '/api/databases',
    access: 'write',
    success: 201,
    prepare: async () => {
      const name = uniq('newdb');
      return {
        path: '/api/databases',
        body: { projectId: f.A.id, name, engine: 'redis' },
        unchanged: async () => {
          const { databases } = await ok(admin('GET', '/api/databases'), 'databases');
          expect(databases.map((d: { name: string }) => d.name)).not.toContain(name);
        },
      };
    },
    check: (res) => expect(res.json.database).toMatchObject({ projectId: f.A.id, repoFullName: 'database:redis', status: 'idle' }),
  },
  {
    method: 'GET',
    template: '/api/databases/{databaseId}',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/databases/${f.dbId}` }),
    check: (res) => expect(res.json.database.id).toBe(f.dbId),
  },
  {
    method: 'DELETE',
    template: '/api/databases/{databaseId}',
    access: 'write',
    success: 200,
    prepare: async () => {
      const db = await freshDatabase();
      return {
        path: `/api/databases/${db.id}`,
        unchanged: async () => expect((await admin('GET', `/api/databases/${db.id}`)).status).toBe(200),
      };
    },
    check: (res) => expect(res.json).toMatchObject({ ok: true, proxy: expect.any(Object) }),
  },
  {
    // Not stopped (never deployed here): start leaves it as it is.
    method: 'POST',
    template: '/api/databases/{databaseId}/start',
    access: 'write',
    success: 200,
    prepare: async () => ({ path: `/api/databases/${f.dbId}/start` }),
    check: (res) => expect(res.json.database).toMatchObject({ id: f.dbId, status: 'idle' }),
  },
  ...(
    [
      ['/api/databases/{databaseId}/stop', () => ({ path: `/api/databases/${f.dbId}/stop` })],
      ['/api/databases/{databaseId}/query', () => ({ path: `/api/databases/${f.dbId}/query`, body: { sql: 'SELECT 1' } })],
    ] as const
  ).map(
    ([template, prepare]): Row => ({
      method: 'POST',
      template,
      access: 'write',
      success: 409,
      prepare: async () => prepare(),
      check: (res) => expect(res.json).toMatchObject({ error: 'not_running' }),
    }),
  ),
  // Servers and the registry (docs/cluster.md): the install's, not a project's. No cluster forms here
  // (a single server; servers added never join), so nothing touches the engine's swarm state.
  {
    method: 'GET',
    template: '/api/servers',
    access: 'install-read',
    success: 200,
    prepare: async () => ({ path: '/api/servers' }),
    check: (res) => expect(res.json.servers[0]).toMatchObject({ id: f.localServerId, local: true, role: 'manager' }),
  },
  {
    method: 'POST',
    template: '/api/servers',
    access: 'admin',
    success: 201,
    prepare: async () => {
      const name = uniq('server');
      return {
        path: '/api/servers',
        body: { name },
        unchanged: async () => {
          const { servers } = await ok(admin('GET', '/api/servers'), 'servers');
          expect(servers.map((s: { name: string }) => s.name)).not.toContain(name);
        },
      };
    },
    check: (res) => {
      expect(res.json.server).toMatchObject({ role: 'worker', state: 'unknown' });
      expect(res.json.join.token).toMatch(/^slwj_/);
    },
  },
  {
    method: 'GET',
    template: '/api/servers/{id}',
    access: 'install-read',
    success: 200,
    prepare: async () => ({ path: `/api/servers/${f.localServerId}` }),
    check: (res) => expect(res.json.server).toMatchObject({ id: f.localServerId, local: true }),
  },
  {
    method: 'PATCH',
    template: '/api/servers/{id}',
    access: 'admin',
    success: 200,
    prepare: async () => {
      const { server: added } = await ok(admin('POST', '/api/servers', { name: uniq('relabel') }), 'server');
      return {
        path: `/api/servers/${added.id}`,
        body: { labels: { zone: 'matrix' } },
        unchanged: async () => expect((await ok(admin('GET', `/api/servers/${added.id}`), 'server')).server.labels).toEqual({}),
      };
    },
    check: (res) => expect(res.json.server.labels).toEqual({ zone: 'matrix' }),
  },
  {
    method: 'DELETE',
    template: '/api/servers/{id}',
    access: 'admin',
    success: 200,
    prepare: async () => {
      const { server: added } = await ok(admin('POST', '/api/servers', { name: uniq('remove') }), 'server');
      return {
        path: `/api/servers/${added.id}`,
        unchanged: async () => expect((await admin('GET', `/api/servers/${added.id}`)).status).toBe(200),
      };
    },
  },
  {
    // The joining machine's own exchange: no key, the join token is its credential; a wrong one is 401 for anyone.
    method: 'POST',
    template: '/api/servers/join',
    access: 'public',
    success: 401,
    prepare: async () => ({
      path: '/api/servers/join',
      body: {
        token: `slwj_${'m'.repeat(43)}`,
        csrBase64: Buffer.from('-----BEGIN CERTIFICATE REQUEST-----\n').toString('base64'),
        address: '192.0.2.10',
        hostname: 'matrix',
      },
    }),
  },
  {
    method: 'GET',
    template: '/api/servers/join.sh',
    access: 'public',
    success: 200,
    contentType: /^text\/x-shellscript/,
    prepare: async () => ({ path: '/api/servers/join.sh' }),
    check: (res) => expect(res.text).toMatch(/^#!\/usr\/bin\/env bash/),
  },
  {
    method: 'GET',
    template: '/api/registry',
    access: 'install-read',
    success: 200,
    prepare: async () => ({ path: '/api/registry' }),
    check: (res) => expect(res.json.registry).toMatchObject({ kind: 'platform', running: false }),
  },
  {
    method: 'PUT',
    template: '/api/registry',
    access: 'admin',
    success: 200,
    prepare: async () => ({ path: '/api/registry', body: { kind: 'platform' } }),
    check: (res) => expect(res.json.registry).toMatchObject({ kind: 'platform' }),
  },
  {
    method: 'GET',
    template: '/api/storage',
    access: 'read',
    success: 200,
    other: 'list-only-own',
    prepare: async () => ({ path: '/api/storage' }),
    check: (res, caller) => {
      const ids = (res.json.storage as Array<{ id: string }>).map((d) => d.id);
      if (caller === 'other') expect(ids).toEqual([]);
      else expect(ids).toContain(f.storageId);
      expect(res.text).not.toMatch(/secretAccessKey/);
    },
  },
  {
    method: 'POST',
    template: '/api/storage',
    access: 'write',
    success: 201,
    prepare: async () => {
      const name = uniq('newfiles');
      return {
        path: '/api/storage',
        body: { projectId: f.A.id, name },
        unchanged: async () => {
          const { storage } = await ok(admin('GET', '/api/storage'), 'storage');
          expect(storage.map((d: { name: string }) => d.name)).not.toContain(name);
        },
      };
    },
    check: (res) => {
      expect(res.json.storage).toMatchObject({ projectId: f.A.id, repoFullName: 'storage:s3', status: 'idle' });
      expect(res.json.credentials.secretAccessKey).toMatch(/^[A-Za-z0-9]{40}$/);
    },
  },
  {
    method: 'GET',
    template: '/api/storage/{storageId}',
    access: 'read',
    success: 200,
    prepare: async () => ({ path: `/api/storage/${f.storageId}` }),
    check: (res) => {
      expect(res.json.storage).toMatchObject({ id: f.storageId, s3: { bucket: 'files', forcePathStyle: true } });
      expect(res.text).not.toMatch(/secretAccessKey/);
    },
  },
  {
    method: 'DELETE',
    template: '/api/storage/{storageId}',
    access: 'write',
    success: 200,
    prepare: async () => {
      const storage = await freshStorage();
      return {
        path: `/api/storage/${storage.id}`,
        unchanged: async () => expect((await admin('GET', `/api/storage/${storage.id}`)).status).toBe(200),
      };
    },
    check: (res) => expect(res.json).toMatchObject({ ok: true, proxy: expect.any(Object) }),
  },
  {
    // Not stopped (never deployed here): start leaves it as it is.
    method: 'POST',
    template: '/api/storage/{storageId}/start',
    access: 'write',
    success: 200,
    prepare: async () => ({ path: `/api/storage/${f.storageId}/start` }),
    check: (res) => expect(res.json.storage).toMatchObject({ id: f.storageId, status: 'idle' }),
  },
  {
    method: 'POST',
    template: '/api/storage/{storageId}/stop',
    access: 'write',
    success: 409,
    prepare: async () => ({ path: `/api/storage/${f.storageId}/stop` }),
    check: (res) => expect(res.json).toMatchObject({ error: 'not_running' }),
  },
  {
    method: 'POST',
    template: '/api/settings/license',
    access: 'admin',
    success: 200,
    prepare: async () => ({ path: '/api/settings/license', body: { key: licenseKey() } }),
    check: (res) => expect(res.json.license).toMatchObject({ valid: true, licensee: 'Matrix', plan: 'test' }),
  },

  // API keys: all-project write keys only
  {
    method: 'POST',
    template: '/api/api-keys',
    access: 'admin',
    success: 201,
    prepare: async () => {
      const name = uniq('minted');
      return {
        path: '/api/api-keys',
        body: { name, access: 'read' },
        unchanged: async () => {
          const { apiKeys } = await ok(admin('GET', '/api/api-keys'), 'keys');
          expect(apiKeys.map((k: { name: string }) => k.name)).not.toContain(name);
        },
      };
    },
    check: (res) => {
      expect(res.json.apiKey).toMatchObject({ access: 'read', projectIds: null });
      expect(res.json.token).toBeTypeOf('string');
    },
  },
  {
    method: 'GET',
    template: '/api/api-keys',
    access: 'admin',
    success: 200,
    prepare: async () => ({ path: '/api/api-keys' }),
    check: (res) => {
      expect(Array.isArray(res.json.apiKeys)).toBe(true);
      expect(res.text).not.toContain(f.tokens.write!);
    },
  },
  {
    method: 'DELETE',
    template: '/api/api-keys/{id}',
    access: 'admin',
    success: 200,
    prepare: async () => {
      const key = await freshKey();
      return {
        path: `/api/api-keys/${key.id}`,
        unchanged: async () => {
          const { apiKeys } = await ok(admin('GET', '/api/api-keys'), 'keys');
          expect(apiKeys.map((k: { id: string }) => k.id)).toContain(key.id);
        },
      };
    },
    check: (res) => expect(res.json).toEqual({ ok: true }),
  },

  // Notifications: the install's administrators only
  {
    method: 'POST',
    template: '/api/notifications/channels',
    access: 'admin',
    success: 201,
    prepare: async () => {
      const name = uniq('channel');
      return {
        path: '/api/notifications/channels',
        body: { type: 'webhook', name, config: { url: CLOSED_TARGET } },
        unchanged: async () => expect(await channelNames()).not.toContain(name),
      };
    },
    check: (res) => {
      expect(res.json.channel).toMatchObject({ type: 'webhook', state: 'ok' });
      expect(res.json.secret).toMatch(/^whsec_/);
      expect(res.text).not.toContain('slipway-matrix');
    },
  },
  {
    method: 'GET',
    template: '/api/notifications/channels',
    access: 'admin',
    success: 200,
    prepare: async () => ({ path: '/api/notifications/channels' }),
    check: (res) => {
      expect(Array.isArray(res.json.channels)).toBe(true);
      expect(res.text).not.toContain('slipway-matrix');
      expect(res.text).not.toContain('whsec_');
    },
  },
  {
    method: 'GET',
    template: '/api/notifications/channels/{id}',
    access: 'admin',
    success: 200,
    prepare: async () => ({ path: `/api/notifications/channels/${(await freshChannel()).id}` }),
    check: (res) => expect(res.text).not.toContain('slipway-matrix'),
  },
  {
    method: 'PATCH',
    template: '/api/notifications/channels/{id}',
    access: 'admin',
    success: 200,
    prepare: async () => {
      const channel = await freshChannel();
      return {
        path: `/api/notifications/channels/${channel.id}`,
        body: { name: `${channel.name}-renamed` },
        unchanged: async () => expect(await channelNames()).toContain(channel.name),
      };
    },
    check: (res) => expect(res.json.channel.name).toMatch(/-renamed$/),
  },
  {
    method: 'DELETE',
    template: '/api/notifications/channels/{id}',
    access: 'admin',
    success: 200,
    prepare: async () => {
      const channel = await freshChannel();
      return {
        path: `/api/notifications/channels/${channel.id}`,
        unchanged: async () => expect(await channelNames()).toContain(channel.name),
      };
    },
    check: (res) => expect(res.json).toEqual({ ok: true }),
  },
  {
    method: 'POST',
    template: '/api/notifications/channels/{id}/test',
    access: 'admin',
    success: 200,
    prepare: async () => ({ path: `/api/notifications/channels/${(await freshChannel()).id}/test` }),
    // Nothing listens there: the answer says why, without the target's secret path.
    check: (res) => {
      expect(res.json.test).toMatchObject({ ok: false, error: expect.any(String) });
      expect(res.text).not.toContain('slipway-matrix');
    },
  },
  {
    method: 'POST',
    template: '/api/notifications/rules',
    access: 'admin',
    success: 201,
    prepare: async () => {
      const channel = await freshChannel();
      const before = await ruleIds();
      return {
        path: '/api/notifications/rules',
        body: { projectId: null, events: ['backup.failed'], channelIds: [channel.id] },
        unchanged: async () => expect((await ruleIds()).sort()).toEqual(before.sort()),
      };
    },
    check: (res) => expect(res.json.rule).toMatchObject({ projectId: null, events: ['backup.failed'] }),
  },
  {
    method: 'GET',
    template: '/api/notifications/rules',
    access: 'admin',
    success: 200,
    prepare: async () => ({ path: '/api/notifications/rules' }),
    check: (res) => expect(Array.isArray(res.json.rules)).toBe(true),
  },
  {
    method: 'GET',
    template: '/api/notifications/rules/{id}',
    access: 'admin',
    success: 200,
    prepare: async () => ({ path: `/api/notifications/rules/${(await freshRule()).id}` }),
    check: (res) => expect(res.json.rule.events).toEqual(['deployment.*']),
  },
  {
    method: 'DELETE',
    template: '/api/notifications/rules/{id}',
    access: 'admin',
    success: 200,
    prepare: async () => {
      const rule = await freshRule();
      return {
        path: `/api/notifications/rules/${rule.id}`,
        unchanged: async () => expect(await ruleIds()).toContain(rule.id),
      };
    },
    check: (res) => expect(res.json).toEqual({ ok: true }),
  },
  {
    method: 'GET',
    template: '/api/notifications/deliveries',
    access: 'admin',
    success: 200,
    prepare: async () => ({ path: '/api/notifications/deliveries' }),
    check: (res) => expect(Array.isArray(res.json.deliveries)).toBe(true),
  },

  // The audit log: the install's administrators; a project's, to its writers
  {
    method: 'GET',
    template: '/api/audit',
    access: 'admin',
    success: 200,
    prepare: async () => ({ path: '/api/audit?limit=5' }),
    check: (res) => {
      expect(res.json.entries.length).toBeGreaterThan(0);
      expect(res.text).not.toContain(f.tokens.write!);
    },
  },
  {
    method: 'GET',
    template: '/api/projects/{projectId}/audit',
    access: 'write',
    success: 200,
    prepare: async () => ({ path: `/api/projects/${f.A.id}/audit?limit=5` }),
    check: (res) => expect(res.json.entries.every((e: { projectId: string }) => e.projectId === f.A.id)).toBe(true),
  },

  // The event stream: what the caller may read (a key for B sees B's)
  {
    method: 'GET',
    template: '/api/events/stream',
    access: 'read',
    success: 200,
    sse: true,
    other: 'list-only-own',
    prepare: async () => ({ path: '/api/events/stream' }),
  },

  // Authentication: public, rate-limited per address (the matrix raises the budgets)
  {
    method: 'POST',
    template: '/api/auth/signup',
    access: 'public',
    success: 201,
    prepare: async () => ({
      path: '/api/auth/signup',
      body: { email: `${uniq('new')}@example.com`, password: 'new user password', name: 'N' },
    }),
    check: (res) => expect(res.json.user.role).toBe('member'),
  },
  {
    method: 'POST',
    template: '/api/auth/signin',
    access: 'public',
    success: 200,
    prepare: async () => ({ path: '/api/auth/signin', body: { email: f.member.email, password: f.member.password } }),
    check: (res) => expect(res.json.session.token).toMatch(/^slw_ses_/),
  },
  {
    method: 'POST',
    template: '/api/auth/forgot-password',
    access: 'public',
    success: 200,
    prepare: async () => ({ path: '/api/auth/forgot-password', body: { email: f.member.email } }),
    check: (res) => expect(res.json).toEqual({ ok: true }),
  },
  {
    method: 'POST',
    template: '/api/auth/reset-password',
    access: 'public',
    success: 400,
    prepare: async () => ({ path: '/api/auth/reset-password', body: { token: `slw_rst_${uniq('guess')}`, password: 'a new password!' } }),
    check: (res) => expect(res.json.details).toEqual({ field: 'token' }),
  },
  // Without a challenge, 2fa/verify confirms a setup: a session's, and none was started (400).
  {
    method: 'POST',
    template: '/api/auth/2fa/verify',
    access: 'session',
    success: 400,
    prepare: async () => ({ path: '/api/auth/2fa/verify', body: { code: '123456' } }),
    check: (res) => expect(res.json.details).toEqual({ field: 'code' }),
  },
  {
    method: 'POST',
    template: '/api/auth/logout',
    access: 'session',
    success: 200,
    freshSession: true,
    prepare: async () => ({ path: '/api/auth/logout' }),
    check: (res) => expect(res.json).toEqual({ ok: true }),
  },
  {
    method: 'POST',
    template: '/api/auth/2fa/setup',
    access: 'session',
    success: 200,
    prepare: async () => ({ path: '/api/auth/2fa/setup' }),
    check: (res) => expect(res.json.recoveryCodes).toHaveLength(10),
  },
  {
    method: 'POST',
    template: '/api/auth/2fa/disable',
    access: 'session',
    success: 409,
    prepare: async () => ({ path: '/api/auth/2fa/disable', body: { code: '123456' } }),
  },

  // The signed-in user's own account and tokens
  {
    method: 'GET',
    template: '/api/user',
    access: 'session',
    success: 200,
    prepare: async () => ({ path: '/api/user' }),
    check: (res, caller) => expect(res.json.user.email).toBe(caller === 'member' ? f.member.email : f.owner.email),
  },
  {
    method: 'POST',
    template: '/api/user/tokens',
    access: 'session',
    success: 201,
    prepare: async () => ({ path: '/api/user/tokens', body: { name: uniq('pat'), scopes: ['project:read'] } }),
    check: (res) => expect(res.json.token).toMatch(/^slw_pat_/),
  },
  {
    method: 'GET',
    template: '/api/user/tokens',
    access: 'session',
    success: 200,
    prepare: async () => ({ path: '/api/user/tokens' }),
    check: (res) => {
      expect(Array.isArray(res.json.tokens)).toBe(true);
      expect(res.text).not.toMatch(/slw_pat_[\w-]{20}/);
    },
  },
  {
    method: 'DELETE',
    template: '/api/user/tokens/{id}',
    access: 'session',
    success: 200,
    // The token is the owner's: another user's token does not exist for the member.
    memberStatus: 404,
    prepare: async () => {
      const made = await ok(ownerCall('POST', '/api/user/tokens', { name: uniq('doomed'), scopes: ['project:read'] }), 'token');
      return {
        path: `/api/user/tokens/${made.personalToken.id}`,
        unchanged: async () => expect((await api(server.url, made.token)('GET', '/api/projects')).status).toBe(200),
      };
    },
    check: (res) => expect(res.json).toEqual({ ok: true }),
  },

  // Users: the owner (and an all-project write key) manages them
  {
    method: 'GET',
    template: '/api/users',
    access: 'admin',
    success: 200,
    prepare: async () => ({ path: '/api/users' }),
    check: (res) => {
      expect(res.json.users.map((u: { email: string }) => u.email)).toEqual(expect.arrayContaining([f.owner.email, f.member.email]));
      expect(res.text).not.toContain('argon2');
    },
  },
  {
    method: 'PATCH',
    template: '/api/users/{userId}',
    access: 'admin',
    success: 200,
    prepare: async () => {
      const user = await freshUser();
      return {
        path: `/api/users/${user.id}`,
        body: { role: 'admin' },
        unchanged: async () => expect((await userById(user.id)).role).toBe('member'),
      };
    },
    check: (res) => expect(res.json.user.role).toBe('admin'),
  },
  {
    method: 'DELETE',
    template: '/api/users/{userId}',
    access: 'admin',
    success: 200,
    prepare: async () => {
      const user = await freshUser();
      return { path: `/api/users/${user.id}`, unchanged: async () => expect((await userById(user.id)).id).toBe(user.id) };
    },
    check: (res) => expect(res.json).toEqual({ ok: true }),
  },
];

/** A new member account (registration is open in this matrix). */
async function freshUser(): Promise<{ id: string }> {
  return (
    await ok(
      api(server.url, undefined)('POST', '/api/auth/signup', {
        email: `${uniq('user')}@example.com`,
        password: 'fresh user password',
        name: 'U',
      }),
      'user',
    )
  ).user;
}
async function userById(id: string): Promise<{ id: string; role: string }> {
  const { users } = await ok(admin('GET', '/api/users'), 'users');
  return users.find((u: { id: string }) => u.id === id);
}
function ownerCall(method: string, path: string, body?: unknown) {
  return api(server.url, f.tokens.owner)(method, path, body);
}
async function signinToken(email: string, password: string): Promise<string> {
  return (await ok(api(server.url, undefined)('POST', '/api/auth/signin', { email, password }), 'signin')).session.token;
}

function expectedStatus(row: Row, caller: Caller): number {
  if (row.access === 'public') return row.success;
  const scope = SCOPE_OF.get(`${row.method} ${row.template}`);
  if (caller.startsWith('pat:')) {
    if (row.access === 'session') return 403;
    const held = caller.slice('pat:'.length);
    return held === 'admin' || held === scope ? row.success : 403;
  }
  switch (caller) {
    case 'none':
    case 'unknown':
    case 'ended':
    case 'revoked':
      return 401;
    case 'read':
      return row.access === 'read' || row.access === 'install-read' ? row.success : 403;
    case 'write':
      return row.access === 'session' ? 403 : row.success;
    case 'other':
      if (row.other === 'list-only-own') return row.success;
      return row.access === 'admin' || row.access === 'session' || row.access === 'install-read' ? 403 : 404;
    case 'owner':
      return row.success;
    case 'member':
      return scope === 'admin' ? 403 : (row.memberStatus ?? row.success);
  }
  throw new Error(`no expectation for ${caller}`);
}

beforeAll(async () => {
  // ~30 unknown-token calls from one address in a minute: above the default auth-failure budget (30).
  server = await startServerProcess({
    AUTH_FAILURES_PER_MINUTE: '1000',
    // The notification rows' channels point at a closed loopback port.
    NOTIFY_ALLOW_PRIVATE_TARGETS: 'true',
    // Hundreds of services, none deployed: a window of its own as large as they need.
    HOST_PORT_RANGE: ownPortRange(2000),
    AUTH_RATE_LIMITS: 'signup=100000,signin=100000,password-reset=100000',
    LICENSE_PUBLIC_KEY: license.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
  });
  admin = api(server.url, server.token);
  const A = await createProject('Project A', 'matrix A', 'A');
  const B = await createProject('Project B', 'matrix B', 'B');
  const web = await createService(A.id, { name: 'web', repoFullName: 'acme/web', volumes: [{ name: 'files', mountPath: '/data' }] }, 'web');
  const db = await createService(
    A.id,
    { name: 'db', repoUrl: 'database', repoFullName: 'database:postgres', internalPort: 5432, databasePublicEnabled: false },
    'db',
  );
  const storage = (await ok(admin('POST', '/api/storage', { projectId: A.id, name: 'files' }), 'storage')).storage;
  const env = await addEnv(web.id, 'GREETING', 'hello');
  const domain = await addDomain(web.id, 'www.acme-web.test');
  const staging = (await ok(admin('POST', `/api/projects/${A.id}/environments`, { name: 'staging' }), 'staging')).environment;
  await ok(admin('POST', `/api/environments/${staging.id}/apps`, { name: 'web', repoFullName: 'acme/web' }), 'staging web');
  await ok(admin('PUT', `/api/projects/${A.id}/env`, { env: { SHARED_GREETING: 'hello' } }), 'shared env');
  const deployment = await freshDeployment(web.id);
  openai = await new OpenAiStandin().start();
  await ok(
    admin('PUT', '/api/settings', { aiProviders: [{ providerId: 'gpt', kind: 'openai', baseUrl: openai.baseUrl, apiKey: openai.apiKey }] }),
    'ai provider',
  );
  f = {
    A,
    B,
    webId: web.id,
    dbId: db.id,
    stagingId: staging.id,
    storageId: storage.id,
    envId: env.id,
    domainId: domain.id,
    deploymentId: deployment.id,
    backupId: '',
    configurationId: '',
    localServerId: (await ok(admin('GET', '/api/servers'), 'servers')).servers[0].id,
    tokens: {
      none: undefined,
      unknown: 'slw_this-token-was-never-issued-0000',
      read: '',
      write: '',
      other: '',
    } as Fixtures['tokens'],
    owner: { email: 'owner@matrix.test', password: 'matrix owner password' },
    member: { email: 'member@matrix.test', password: 'matrix member password', id: '' },
  };
  f.tokens.read = await mintKey('read');
  f.tokens.write = await mintKey('write');
  f.tokens.other = await mintKey('write', [B.id]);
  // Accounts: the first signup is the owner; registration is then opened for the member and the signup row.
  const anyone = api(server.url, undefined);
  await ok(anyone('POST', '/api/auth/signup', { ...f.owner, name: 'Owner' }), 'owner');
  await ok(admin('PUT', '/api/settings', { registrationOpen: true }), 'open registration');
  f.member.id = (
    await ok(anyone('POST', '/api/auth/signup', { email: f.member.email, password: f.member.password, name: 'Member' }), 'member')
  ).user.id;
  f.tokens.owner = await signinToken(f.owner.email, f.owner.password);
  f.tokens.member = await signinToken(f.member.email, f.member.password);
  f.tokens.ended = await signinToken(f.owner.email, f.owner.password);
  await ok(api(server.url, f.tokens.ended)('POST', '/api/auth/logout'), 'logout');
  const revoked = await ok(ownerCall('POST', '/api/user/tokens', { name: 'revoked', scopes: ['admin'] }), 'revoked');
  await ok(ownerCall('DELETE', `/api/user/tokens/${revoked.personalToken.id}`), 'revoke');
  f.tokens.revoked = revoked.token;
  for (const scope of SCOPES)
    f.tokens[`pat:${scope}`] = (await ok(ownerCall('POST', '/api/user/tokens', { name: `only ${scope}`, scopes: [scope] }), scope)).token;
  f.backupId = await freshBackup();
  f.configurationId = (await freshConfiguration()).id;
}, 60_000);

afterAll(async () => {
  await openai?.close();
  await server?.dispose();
}, 60_000);

describe('the matrix covers every documented endpoint', () => {
  it('has one row per path of /api/openapi.json (the two public ones excepted), SSE paths included', async () => {
    const res = await api(server.url, undefined)('GET', '/api/openapi.json');
    expect(res.status).toBe(200);
    const documented: string[] = [];
    for (const [path, item] of Object.entries(res.json.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(item)) {
        if (['get', 'post', 'put', 'patch', 'delete'].includes(method) && path !== '/api/health' && path !== '/api/system/public')
          documented.push(`${method.toUpperCase()} ${path}`);
      }
    }
    const covered = rows.map((row) => `${row.method} ${row.template}`);
    expect(new Set(covered).size).toBe(covered.length);
    expect([...covered].sort()).toEqual([...documented].sort());
    expect(covered).toContain('GET /api/deployments/{deploymentId}/stream');
    expect(covered).toContain('GET /api/services/{serviceId}/runtime-logs/stream');
  });

  it('/api/health is public', async () => {
    const res = await api(server.url, undefined)('GET', '/api/health');
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      ok: true,
      status: 'ok',
      engine: { status: 'up' },
      proxy: { status: 'disabled' },
      database: { status: 'up' },
    });
    expect(Object.keys(res.json as object).sort()).toEqual(['checkedAt', 'database', 'engine', 'notifications', 'ok', 'proxy', 'status']);
  });
});

describe('/api/system/public', () => {
  it('answers every caller alike, without a key, and shows nothing secret', async () => {
    const answers = [];
    for (const caller of CALLERS) {
      const res = await api(server.url, f.tokens[caller])('GET', '/api/system/public');
      expect(res.status, `${caller}: ${res.text}`).toBe(200);
      expect(Object.keys(res.json as object).sort()).toEqual(['features', 'license', 'ownerExists', 'registrationOpen', 'version']);
      answers.push(res.json);
    }
    for (const answer of answers) expect(answer).toEqual(answers[0]);
    const text = JSON.stringify(answers[0]);
    for (const token of Object.values(f.tokens)) if (token) expect(text).not.toContain(token);
    expect(text).not.toContain(server.token);
  });
});

describe('POST /api/hooks/{projectId} (the public webhook endpoint)', () => {
  it('answers every caller alike: a key is no credential there, only a delivery signed with the project secret is', async () => {
    await webhookOfA();
    for (const caller of CALLERS) {
      const res = await api(server.url, f.tokens[caller])('POST', `/api/hooks/${f.A.id}`, { zen: 'unsigned' });
      expectErrorBody(res, 401, `hooks ${caller}`);
      expect(res.json.error, caller).toBe('unauthorized');
    }
    const deliveries = await ok(admin('GET', `/api/projects/${f.A.id}/webhook/deliveries`), 'deliveries');
    expect(deliveries.deliveries.filter((d: { outcome: string }) => d.outcome === 'refused').length).toBeGreaterThanOrEqual(CALLERS.length);
    for (const token of Object.values(f.tokens)) if (token) expect(JSON.stringify(deliveries)).not.toContain(token);
  });
});

describe('access matrix', () => {
  for (const row of rows) {
    describe(`${row.method} ${row.template}`, () => {
      for (const caller of CALLERS) {
        const expected = expectedStatus(row, caller);
        it(`${caller} -> ${expected}`, async () => {
          const prepared = await row.prepare();
          const token =
            row.freshSession && (caller === 'owner' || caller === 'member')
              ? await signinToken(f[caller].email, f[caller].password)
              : f.tokens[caller];
          const label = `${caller} ${row.method} ${prepared.path}`;
          if (row.sse) {
            const res = await openStream(server.url, prepared.path, token);
            if (expected === 200) {
              expect(res.status, label).toBe(200);
              expect(res.headers.get('content-type') ?? '').toMatch(/^text\/event-stream/);
            } else {
              expectErrorBody(res, expected, label);
            }
            return;
          }
          const res = await api(server.url, token)(row.method, prepared.path, prepared.body);
          if (expected < 300) {
            expect(res.status, `${label}: ${res.text}`).toBe(expected);
            expect(res.headers.get('content-type') ?? '').toMatch(row.contentType ?? /^application\/json/);
            await row.check?.(res, caller);
          } else {
            expectErrorBody(res, expected, label);
            // A message may echo an id the caller sent itself (in the path or the body), as for an unknown one.
            const sent = prepared.path + JSON.stringify(prepared.body ?? '');
            if (caller === 'other' && expected === 404 && !sent.includes(f.A.id)) expect(res.text, label).not.toContain(f.A.id);
            await prepared.unchanged?.();
          }
        });
      }
    });
  }
});

describe('scope rules', () => {
  it('a selected-project key may not create projects, even with write access to every existing project', async () => {
    const token = await mintKey('write', [f.A.id, f.B.id]);
    const res = await api(server.url, token)('POST', '/api/projects', { name: uniq('nope'), description: '' });
    expectErrorBody(res, 403, 'scoped POST /api/projects');
  });

  it('API keys are managed only by a write key for all projects', async () => {
    const target = await freshKey();
    const callers = {
      'read, all projects': await mintKey('read'),
      'write, project A': await mintKey('write', [f.A.id]),
      'write, A and B': await mintKey('write', [f.A.id, f.B.id]),
    };
    for (const [who, token] of Object.entries(callers)) {
      const call = api(server.url, token);
      expectErrorBody(await call('GET', '/api/api-keys'), 403, `${who} GET /api/api-keys`);
      expectErrorBody(await call('POST', '/api/api-keys', { name: 'x', access: 'read' }), 403, `${who} POST /api/api-keys`);
      expectErrorBody(await call('DELETE', `/api/api-keys/${target.id}`), 403, `${who} DELETE /api/api-keys`);
    }
    const { apiKeys } = await ok(admin('GET', '/api/api-keys'), 'keys');
    expect(apiKeys.map((k: { id: string }) => k.id)).toContain(target.id);
  });

  it('GET /api/projects with a scoped key lists only its projects', async () => {
    const onlyA = await ok(api(server.url, await mintKey('read', [f.A.id]))('GET', '/api/projects'), 'list A');
    expect(onlyA.projects.map((p: Project) => p.id)).toEqual([f.A.id]);
    const onlyB = await ok(api(server.url, await mintKey('write', [f.B.id]))('GET', '/api/projects'), 'list B');
    expect(onlyB.projects.map((p: Project) => p.id)).toEqual([f.B.id]);
    const both = await ok(api(server.url, await mintKey('read', [f.A.id, f.B.id]))('GET', '/api/projects'), 'list AB');
    expect(both.projects.map((p: Project) => p.id).sort()).toEqual([f.A.id, f.B.id].sort());
  });

  it('a scoped key reaches its own project: reads, writes and the streams of project A with a key for A', async () => {
    const call = api(server.url, await mintKey('write', [f.A.id]));
    expect((await call('GET', `/api/projects/${f.A.slug}`)).status).toBe(200);
    expect((await call('GET', `/api/services/${f.webId}/overview`)).status).toBe(200);
    expect((await call('POST', `/api/services/${f.webId}/deployments`)).status).toBe(201);
    expectHidden(await call('GET', `/api/projects/${f.B.slug}`), 'A-key GET project B', [f.B.id]);
  });

  it('a read key scoped to another project gets 404 for project A, as for an unknown id, streams included', async () => {
    const token = await mintKey('read', [f.B.id]);
    const call = api(server.url, token);
    expectHidden(await call('GET', `/api/projects/${f.A.slug}`), 'B-read GET project A', [f.A.id]);
    expectHidden(await call('GET', `/api/services/${f.webId}/overview`), 'B-read overview', [f.A.id, f.A.slug]);
    expectHidden(await call('GET', `/api/deployments/${f.deploymentId}/logs`), 'B-read logs', [f.A.id, f.webId]);
    expectHidden(await openStream(server.url, `/api/deployments/${f.deploymentId}/stream`, token), 'B-read stream', [f.A.id, f.webId]);
    expectHidden(await openStream(server.url, `/api/services/${f.webId}/runtime-logs/stream`, token), 'B-read runtime stream', [f.A.id]);
    // An existing slug of another project and a slug that exists nowhere answer alike.
    const real = await call('GET', `/api/projects/${f.A.slug}`);
    const unknown = await call('GET', `/api/projects/no-such-${f.A.slug}`);
    expect(real.status).toBe(unknown.status);
    expect(real.json.message.replace(f.A.slug, 'X')).toBe(unknown.json.message.replace(`no-such-${f.A.slug}`, 'X'));
  });

  it('transfer needs both projects visible: a key for only the source or only the target gets 404', async () => {
    const service = await freshService();
    for (const [who, projectIds] of [
      ['source only', [f.A.id]],
      ['target only', [f.B.id]],
    ] as const) {
      const res = await api(server.url, await mintKey('write', [...projectIds]))('POST', `/api/services/${service.id}/transfer`, {
        targetProjectId: f.B.id,
      });
      expectHidden(res, `transfer with a key for the ${who}`, who === 'source only' ? [] : [f.A.id]);
      expect((await overview(service.id)).service.projectId).toBe(f.A.id);
    }
    const res = await api(server.url, await mintKey('write', [f.A.id, f.B.id]))('POST', `/api/services/${service.id}/transfer`, {
      targetProjectId: f.B.id,
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json.service.projectId).toBe(f.B.id);
    expect((await overview(service.id)).service.projectId).toBe(f.B.id);
  });

  it('a revoked key is refused with 401', async () => {
    const minted = await ok(admin('POST', '/api/api-keys', { name: uniq('revoked'), access: 'write' }), 'key');
    const call = api(server.url, minted.token);
    expect((await call('GET', '/api/projects')).status).toBe(200);
    expect((await admin('DELETE', `/api/api-keys/${minted.apiKey.id}`)).status).toBe(200);
    expectErrorBody(await call('GET', '/api/projects'), 401, 'revoked key');
  });
});

/** Each operation's procedure, `METHOD /path/{param}` to the name the audit log records. */
const OPERATION_OF = new Map<string, string>(
  proceduresOf(appRouter).flatMap(({ path, meta }) => [
    ...(meta.openapi ? [[`${meta.openapi.method} ${meta.openapi.path}`, path] as const] : []),
    ...(meta.sse ? [[`GET ${meta.sse.path}`, path] as const] : []),
    ...(meta.download ? [[`GET ${meta.download.path}`, path] as const] : []),
  ]),
);

describe('the audit log of the matrix', () => {
  it('holds a record of every operation above: each write a success, each refused one its code', async () => {
    const missing: string[] = [];
    for (const row of rows) {
      // A public read (the join script) refuses no one, and successful reads are not recorded: nothing to find.
      if (row.method === 'GET' && row.access === 'public') continue;
      const operation = OPERATION_OF.get(`${row.method} ${row.template}`);
      expect(operation, `${row.method} ${row.template}`).toBeTypeOf('string');
      const res = await admin('GET', `/api/audit?operation=${encodeURIComponent(operation!)}&limit=200`);
      expect(res.status, res.text).toBe(200);
      const outcomes = new Set((res.json.entries as Array<{ outcome: string }>).map((e) => e.outcome));
      // Reads are recorded when refused (401, 403, insufficient_scope: the matrix refuses every non-public one); writes always.
      const wanted = row.method !== 'GET' && row.success < 300 ? 'success' : null;
      if (wanted ? !outcomes.has(wanted) : outcomes.size === 0)
        missing.push(`${row.method} ${row.template} (${operation}): ${[...outcomes]}`);
    }
    expect(missing).toEqual([]);
  });
});

describe('error bodies of this file', () => {
  it('never leak a stack trace, SQL or driver message', () => {
    expect(errorBodies.length).toBeGreaterThan(50);
    expectNoLeaks(errorBodies);
  });
});
