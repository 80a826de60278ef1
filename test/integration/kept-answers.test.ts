import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createKoaApp } from '../../adapters/http/koa-app.js';
import { requestContexts } from '../../adapters/http/request-context.js';
import { SseBridge } from '../../adapters/http/sse-bridge.js';
import { AnswerCache } from '../../adapters/http/answer-cache.js';
import { appRouter } from '../../routers/app.router.js';
import type { RequestLimiter } from '../../routers/trpc.js';
import { RateLimitedError } from '../../src/domain/errors.js';
import { VersionedCache } from '../../src/platform/versioned-cache.js';
import { traceReads } from '../../src/platform/read-trace.js';
import { createHarness, type Harness } from '../helpers/harness.js';

/*
 * Kept answers (adapters/http/answer-cache.ts): the REST door sends a read's bytes again while every cached
 * read it was made of is current. Over real HTTP against the edge in this process, so that a spy on the use
 * case can tell a kept answer (no call) from a procedure's.
 */

let h: Harness;
let server: Server;
let url: string;
/** Requests each key sent that the limiter counted; a key in `refuse` is over its budget. */
const counted = new Map<string, number>();
const refuse = new Set<string>();

const limiter: RequestLimiter = {
  async recordAuthFailure() {},
  assertRequestAllowed(keyId) {
    counted.set(keyId, (counted.get(keyId) ?? 0) + 1);
    if (refuse.has(keyId)) throw new RateLimitedError('Too many requests', 60);
  },
  async assertAuthAttempt() {},
  async assertWebhookDelivery() {},
};

beforeEach(async () => {
  counted.clear();
  refuse.clear();
  h = await createHarness();
  const app = createKoaApp({
    router: appRouter,
    createContext: requestContexts({ services: h.services, limiter, trustProxy: false }),
    sse: new SseBridge(),
    bodyLimitBytes: 1024 * 1024,
    log: () => {},
    dashboard: null,
  });
  server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  vi.restoreAllMocks();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await h.close();
});

async function call(token: string, method: string, path: string, body?: unknown) {
  const res = await fetch(url + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, json: text ? JSON.parse(text) : undefined };
}

async function fixture() {
  const admin = (method: string, path: string, body?: unknown) => call(h.adminToken, method, path, body);
  const project = (await admin('POST', '/api/projects', { name: 'Shop' })).json.project;
  const other = (await admin('POST', '/api/projects', { name: 'Other' })).json.project;
  const web = (await admin('POST', `/api/projects/${project.id}/services`, { name: 'web', repoFullName: 'acme/web' })).json.service;
  const hidden = (await admin('POST', `/api/projects/${other.id}/services`, { name: 'api', repoFullName: 'acme/api' })).json.service;
  await admin('POST', `/api/services/${web.id}/env`, { key: 'GREETING', value: 'hello' });
  return { admin, project, other, web, hidden };
}

describe('kept answers of REST reads', () => {
  it('sends the same bytes without running the read, until a write changes what it read', async () => {
    const { admin, web } = await fixture();
    const overview = vi.spyOn(h.services.serviceReader, 'overview');
    const first = await admin('GET', `/api/services/${web.id}/overview`);
    const second = await admin('GET', `/api/services/${web.id}/overview`);
    const third = await admin('GET', `/api/services/${web.id}/overview`);
    expect([first.status, second.status, third.status]).toEqual([200, 200, 200]);
    expect(third.text).toBe(first.text);
    // The first read, from the database, is kept with a check of the tables it read.
    expect(overview).toHaveBeenCalledTimes(1);

    expect((await admin('POST', `/api/services/${web.id}/env`, { key: 'COLOUR', value: 'blue' })).status).toBe(200);
    const after = await admin('GET', `/api/services/${web.id}/overview`);
    expect(after.json.env.map((v: { key: string }) => v.key).sort()).toEqual(['COLOUR', 'GREETING']);
    expect(overview).toHaveBeenCalledTimes(2);
  });

  it('lists a new deployment and a new project after their answers were kept', async () => {
    const { admin, web } = await fixture();
    for (let i = 0; i < 3; i++) expect((await admin('GET', `/api/services/${web.id}/deployments`)).json.deployments).toHaveLength(0);
    for (let i = 0; i < 3; i++) expect((await admin('GET', '/api/projects')).json.projects).toHaveLength(2);
    const { deployment } = (await admin('POST', `/api/services/${web.id}/deployments`)).json;
    expect((await admin('GET', `/api/services/${web.id}/deployments`)).json.deployments.map((d: { id: string }) => d.id)).toEqual([
      deployment.id,
    ]);
    await admin('POST', '/api/projects', { name: 'Third' });
    expect((await admin('GET', '/api/projects')).json.projects).toHaveLength(3);
  });

  it('keeps a list read from the database, shows a write at once, and reads it again after 2 s', async () => {
    const { admin, project } = await fixture();
    const list = vi.spyOn(h.services.environments, 'list');
    const environments = async () => (await admin('GET', `/api/projects/${project.id}/environments`)).json.environments as unknown[];
    for (let i = 0; i < 3; i++) expect(await environments()).toHaveLength(1);
    expect(list).toHaveBeenCalledTimes(1);
    expect((await admin('POST', `/api/projects/${project.id}/environments`, { name: 'staging' })).status).toBe(201);
    expect(await environments()).toHaveLength(2);
    expect(await environments()).toHaveLength(2);
    expect(list).toHaveBeenCalledTimes(2);
    // Another process may write the same tables (the CLI, a second control plane): a read of them is trusted 2 s at most.
    const now = Date.now();
    vi.spyOn(Date, 'now').mockReturnValue(now + 2_500);
    expect(await environments()).toHaveLength(2);
    expect(list).toHaveBeenCalledTimes(3);
  });

  it('runs a read once for the requests that miss together, and sends them what it kept', async () => {
    const { admin, project } = await fixture();
    const { apiKey, token } = (await admin('POST', '/api/api-keys', { name: 'dashboard', access: 'read' })).json;
    const environments = h.services.environments;
    const original = environments.list.bind(environments);
    const list = vi.spyOn(environments, 'list').mockImplementation(async (...args) => {
      await new Promise((resolve) => setTimeout(resolve, 100));
      return original(...args);
    });
    const answers = await Promise.all(Array.from({ length: 5 }, () => call(token, 'GET', `/api/projects/${project.id}/environments`)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(list).toHaveBeenCalledTimes(1);
    // Each was still its own request, counted once against the key's budget.
    expect(counted.get(apiKey.id)).toBe(5);
  });

  it('checks the Host header before a kept answer, as before any other', async () => {
    const { admin, web } = await fixture();
    const target = `/api/services/${web.id}/overview`;
    for (let i = 0; i < 2; i++) expect((await admin('GET', target)).status).toBe(200);
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(url + target, { headers: { host: 'not a host', authorization: `Bearer ${h.adminToken}` } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(400);
  });

  it("never sends one key's answer to another key, nor to one that cannot see the project", async () => {
    const { admin, project, web, hidden } = await fixture();
    for (let i = 0; i < 3; i++) await admin('GET', `/api/services/${hidden.id}/overview`);
    for (let i = 0; i < 3; i++) await admin('GET', '/api/projects');
    const scoped = await h.mintKey('read', [project.id]);
    for (let i = 0; i < 3; i++) expect((await call(scoped, 'GET', `/api/services/${hidden.id}/overview`)).status).toBe(404);
    const projects = await call(scoped, 'GET', '/api/projects');
    expect(projects.json.projects.map((p: { id: string }) => p.id)).toEqual([project.id]);
    expect((await call(scoped, 'GET', `/api/services/${web.id}/overview`)).status).toBe(200);
  });

  it('answers 401 once the key is revoked, and 429 over its budget, with the answer kept', async () => {
    const { admin, web } = await fixture();
    const { apiKey, token } = (await admin('POST', '/api/api-keys', { name: 'ci', access: 'read' })).json;
    const path = `/api/services/${web.id}/overview`;
    for (let i = 0; i < 3; i++) expect((await call(token, 'GET', path)).status).toBe(200);
    // Every request counts against the key's budget, kept or not.
    expect(counted.get(apiKey.id)).toBe(3);
    refuse.add(apiKey.id);
    const limited = await call(token, 'GET', path);
    expect(limited.status).toBe(429);
    expect(limited.json.error).toBe('rate_limited');
    refuse.delete(apiKey.id);
    expect((await admin('DELETE', `/api/api-keys/${apiKey.id}`)).status).toBe(200);
    const revoked = await call(token, 'GET', path);
    expect(revoked.status).toBe(401);
    expect(revoked.json.error).toBe('unauthorized');
  });

  it('keeps no answer of a procedure that did not opt in, though its reads are cache hits alone', async () => {
    const { admin, web } = await fixture();
    const get = vi.spyOn(h.services.serviceReader, 'get');
    // The general API's app: made of the overview's cache alone, but its procedure does not opt in.
    for (let i = 0; i < 3; i++) expect((await admin('GET', `/api/apps/${web.id}`)).status).toBe(200);
    expect(get).toHaveBeenCalledTimes(3);
  });
});

describe('AnswerCache', () => {
  const trace = (owner: string, current = () => true) => ({ owner, checks: [current], untracked: false, closed: true });

  it('keeps only answers whose every read can be checked, and drops one whose read changed', () => {
    const answers = new AnswerCache();
    answers.keep('/a', { owner: 'k', checks: [], untracked: false, closed: true }, 'project:read', '{}');
    answers.keep('/b', { ...trace('k'), untracked: true }, 'project:read', '{}');
    answers.keep('/c', { owner: null, checks: [() => true], untracked: false, closed: true }, 'project:read', '{}');
    expect([answers.has('/a'), answers.has('/b'), answers.has('/c')]).toEqual([false, false, false]);
    let current = true;
    answers.keep(
      '/d',
      trace('k', () => current),
      'project:read',
      '{"x":1}',
    );
    expect(answers.get('/d', 'k')?.body.toString()).toBe('{"x":1}');
    expect(answers.get('/d', 'other')).toBeUndefined();
    current = false;
    expect(answers.get('/d', 'k')).toBeUndefined();
    expect(answers.has('/d')).toBe(false);
  });

  it('holds at most 16 MB, dropping the oldest first', () => {
    const answers = new AnswerCache();
    const big = `"${'x'.repeat(3 * 1024 * 1024)}"`;
    for (let i = 0; i < 6; i++) answers.keep(`/p${i}`, trace('k'), 'project:read', big);
    expect(answers.has('/p0')).toBe(false);
    expect(answers.has('/p5')).toBe(true);
    expect([0, 1, 2, 3, 4, 5].filter((i) => answers.has(`/p${i}`))).toHaveLength(5);
  });
});

describe('read traces', () => {
  it('records a check per versioned-cache hit that fails once the version moves', async () => {
    let version = 0;
    const cache = new VersionedCache<string, number>(() => version);
    cache.set('a', 1, 0);
    const { trace, result } = traceReads(async () => cache.get('a'));
    expect(await result).toBe(1);
    expect(trace.untracked).toBe(false);
    expect(trace.checks.map((check) => check())).toEqual([true]);
    version = 1;
    expect(trace.checks.map((check) => check())).toEqual([false]);
  });

  it('records nothing of what the traced call left running once it ended', async () => {
    const cache = new VersionedCache<string, number>(() => 0);
    cache.set('a', 1, 0);
    let later: Promise<void> | undefined;
    const { trace, result } = traceReads(async () => {
      later = new Promise<void>((resolve) =>
        setTimeout(() => {
          cache.get('a');
          resolve();
        }, 20),
      );
    });
    await result;
    await later;
    expect(trace.closed).toBe(true);
    expect(trace.checks).toHaveLength(0);
  });
});
