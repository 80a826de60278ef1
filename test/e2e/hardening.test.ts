import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectErrorShape } from '../helpers/error-bodies.js';
import { ok, openStream, type ApiResponse } from '../helpers/http.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/*
 * The defects of issue #9, each over real HTTP against the server as `npm start` runs it:
 * traversal through encoded dot segments, NUL bytes, deep JSON, the 413 that left a connection
 * hanging, parser rejections without a JSON body, credentials in repoUrl, content types and
 * unknown fields.
 */

let server: ServerProcess;
let admin: ReturnType<typeof api>;
let projectId: string;
let serviceId: string;
let envId: string;
let domainId: string;

beforeAll(async () => {
  server = await startServerProcess();
  admin = api(server.url, server.token);
  projectId = (await ok(admin('POST', '/api/projects', { name: 'Hardening', description: '' }), 'project')).project.id;
  serviceId = (await ok(admin('POST', `/api/projects/${projectId}/services`, { name: 'web', repoFullName: 'acme/web' }), 'service')).service
    .id;
  await ok(admin('POST', `/api/services/${serviceId}/env`, { key: 'GREETING', value: 'hi' }), 'env');
  const overview = await ok(admin('GET', `/api/services/${serviceId}/overview`), 'overview');
  envId = overview.env[0].id;
  domainId = (await ok(admin('POST', `/api/services/${serviceId}/domains`, { hostname: 'www.hardening.test' }), 'domain')).domain.id;
}, 60_000);

afterAll(async () => {
  await server?.dispose();
}, 30_000);

function expectField(res: ApiResponse, status: number, field: string, label: string): void {
  expectErrorShape(res, status, label);
  expect(res.json.details.field, label).toBe(field);
}

/** Sends raw bytes on a fresh connection; resolves with everything the server sent and whether it closed. */
function rawExchange(payload: Buffer | string, waitMs = 3_000): Promise<{ text: string; closed: boolean }> {
  const url = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closed: false });
    }, waitMs);
    socket.on('data', (chunk) => (text += chunk.toString('latin1')));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closed: true });
    });
    socket.on('connect', () => socket.write(payload));
    socket.on('timeout', () => reject(new Error('timeout')));
  });
}

/** One request as sent, byte for byte: fetch would resolve `%2e%2e` itself before sending. */
async function rawRequest(method: string, path: string, body?: unknown): Promise<ApiResponse> {
  const json = body === undefined ? '' : JSON.stringify(body);
  const { text } = await rawExchange(
    `${method} ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.token}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`,
  );
  const parsed = parseRaw(text);
  const type = /content-type: ([^\r\n]+)/.exec(parsed.headers)?.[1] ?? '';
  return { status: parsed.status, json: parsed.json, text, headers: new Headers({ 'content-type': type }) };
}

function parseRaw(text: string): { status: number; headers: string; json: any } {
  const [head, ...rest] = text.split('\r\n\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head ?? '')?.[1]);
  let body = rest.join('\r\n\r\n');
  if (/\r\ntransfer-encoding: chunked/i.test(head ?? '')) body = unchunk(body);
  let json: any;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  return { status, headers: (head ?? '').toLowerCase(), json };
}

/** A chunked body's data (its chunks are ASCII here, so lengths count characters). */
function unchunk(body: string): string {
  let data = '';
  for (let at = 0; ; ) {
    const eol = body.indexOf('\r\n', at);
    const size = Number.parseInt(body.slice(at, eol), 16);
    if (!(size > 0)) return data;
    data += body.slice(eol + 2, eol + 2 + size);
    at = eol + 2 + size + 2;
  }
}

function expectRawError(text: string, status: number, label: string): void {
  const { status: got, headers, json } = parseRaw(text);
  expect(got, `${label}: ${text.slice(0, 300)}`).toBe(status);
  expect(headers, label).toContain('content-type: application/json');
  expect(headers, label).toContain('connection: close');
  expect(Object.keys(json ?? {}).sort(), label).toEqual(['details', 'error', 'message']);
}

describe('path traversal', () => {
  it('the three examples of the issue are 400 and change nothing', async () => {
    for (const [method, path] of [
      ['DELETE', `/api/services/${serviceId}/env/%2e%2e`],
      ['DELETE', `/api/projects/${projectId}/services/%2e%2e`],
      ['PATCH', `/api/services/${serviceId}/domains/%2e%2e`],
    ] as const) {
      const res = await rawRequest(method, path, method === 'PATCH' ? { hostname: 'x.hardening.test' } : undefined);
      expectField(res, 400, 'path', `${method} ${path}`);
    }
    const overview = await ok(admin('GET', `/api/services/${serviceId}/overview`), 'still there');
    expect(overview.service.id).toBe(serviceId);
    expect(overview.env.map((e: { id: string }) => e.id)).toContain(envId);
    expect(overview.domains.map((d: { id: string; hostname: string }) => [d.id, d.hostname])).toEqual([[domainId, 'www.hardening.test']]);
    expect((await ok(admin('GET', '/api/projects'), 'projects')).projects.map((p: { id: string }) => p.id)).toContain(projectId);
  });

  it('raw and mixed dot segments and encoded separators are refused before routing', async () => {
    for (const segment of ['.', '..', '%2e', '.%2E', '%2E.', '..%2f..', 'a%2fb', 'a%5Cb', '%2F', '%zz', 'a\\b']) {
      const res = await rawRequest('DELETE', `/api/services/${serviceId}/env/${segment}`);
      expectField(res, 400, 'path', segment);
    }
    // One decoding only: a double-encoded dot is an opaque (unknown) id.
    expectErrorShape(await rawRequest('DELETE', `/api/services/${serviceId}/env/%252e%252e`), 404, 'double-encoded');
    expect((await admin('GET', `/api/services/${serviceId}/overview`)).status).toBe(200);
  });
});

describe('NUL and control characters', () => {
  it('are a 400 naming the field, on every route the fuzz found', async () => {
    expectField(await admin('POST', '/api/projects', { name: 'x', description: 'a\u0000b' }), 400, 'description', 'project description');
    expectField(await admin('POST', '/api/projects', { name: 'a\u0001b' }), 400, 'name', 'project name');
    expectField(
      await admin('POST', `/api/services/${serviceId}/transfer`, { targetProjectId: 'x\u0000y' }),
      400,
      'targetProjectId',
      'transfer',
    );
    expectField(await admin('POST', '/api/api-keys', { name: 'k\u0000', access: 'read' }), 400, 'name', 'api key name');
    // In a path, encoded control characters are refused with the path, before routing.
    expectField(await admin('GET', '/api/deployments/x%00y'), 400, 'path', 'deployment get');
    expectField(await openStream(server.url, '/api/deployments/x%00y/stream', server.token), 400, 'path', 'deployment stream');
    expectField(await openStream(server.url, '/api/services/x%1fy/runtime-logs/stream', server.token), 400, 'path', 'runtime stream');
    // Free text keeps tabs and line breaks.
    const created = await ok(admin('POST', '/api/projects', { name: 'Tabs', description: 'one\ttwo\nthree\r\n' }), 'free text');
    expect(created.project.description).toBe('one\ttwo\nthree\r\n');
  });
});

describe('request bodies', () => {
  it('a body nested 5,000 levels deep is a 400 on body, and the server lives on', async () => {
    const deep = `{"name":"deep","description":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    expectField(await admin('POST', '/api/projects', deep), 400, 'body', 'deep body');
    expectField(
      await admin('PATCH', `/api/projects/${projectId}`, `{"name":${'{"a":'.repeat(100)}1${'}'.repeat(100)}}`),
      400,
      'body',
      'deep object',
    );
    expect((await admin('GET', '/api/health')).status).toBe(200);
  });

  it('/trpc has the same depth limit: validation_error in its envelope, nested in json or in meta, batched or not, in a query', async () => {
    const trpc = async (path: string, body?: string) => {
      const res = await fetch(`${server.url}/trpc/${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
        body,
      });
      const json: any = await res.json();
      const error = (Array.isArray(json) ? json[0] : json).error.json;
      return { status: res.status, data: error.data, message: error.message as string };
    };
    const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
    const tooDeep = (label: string, answer: { status: number; data: any; message: string }) => {
      expect(answer.status, label).toBe(400);
      expect(answer.data.error, label).toBe('validation_error');
      expect(answer.data.details, label).toEqual({ field: 'body', maxDepth: 64 });
      expect(answer.message, label).toBe('The request body is nested deeper than 64 levels');
    };
    tooDeep('meta', await trpc('projects.create', `{"json":{"name":"x"},"meta":{"values":${nested(20_000)}}}`));
    tooDeep('meta, batched', await trpc('projects.create?batch=1', `{"0":{"json":{"name":"x"},"meta":{"values":${nested(20_000)}}}}`));
    tooDeep('json', await trpc('projects.create', `{"json":{"name":"x","description":${nested(20_000)}}}`));
    tooDeep('json, batched', await trpc('projects.create?batch=1', `{"0":{"json":{"name":"x","description":${nested(5_000)}}}}`));
    tooDeep('query input', await trpc(`projects.list?batch=1&input=${encodeURIComponent(`{"0":{"json":${nested(1_000)}}}`)}`));
    // REST's limit to the level: an input 64 deep reaches the procedure (a wrong type), 65 deep does not.
    const input = (levels: number) => `{"name":"x","description":${nested(levels - 1)}}`;
    expectField(await admin('POST', '/api/projects', input(64)), 400, 'description', 'REST, 64 deep');
    expectField(await admin('POST', '/api/projects', input(65)), 400, 'body', 'REST, 65 deep');
    for (const [label, body] of [
      ['tRPC, 64 deep', `{"json":${input(64)}}`],
      ['tRPC batched, 64 deep', `{"0":{"json":${input(64)}}}`],
    ] as const) {
      const answer = await trpc(label.includes('batched') ? 'projects.create?batch=1' : 'projects.create', body);
      expect([answer.status, answer.data.details], label).toEqual([400, { field: 'description' }]);
    }
    tooDeep('tRPC, 65 deep', await trpc('projects.create', `{"json":${input(65)}}`));
    tooDeep('tRPC batched, 65 deep', await trpc('projects.create?batch=1', `{"0":{"json":${input(65)}}}`));
    expect((await admin('GET', '/api/health')).status).toBe(200);
  });

  it('/trpc has the same body limit: 413 payload_too_large in its envelope, and the connection is closed', async () => {
    const body = `{"json":{"name":"big","description":"${'a'.repeat(1024 * 1024)}"}}`;
    const { text, closed } = await rawExchange(
      `POST /trpc/projects.create HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      5_000,
    );
    const { status, headers, json } = parseRaw(text);
    expect(status, text.slice(0, 300)).toBe(413);
    expect(headers).toContain('connection: close');
    expect(json.error.json.data).toMatchObject({ error: 'payload_too_large', details: { limitBytes: 1024 * 1024 } });
    expect(closed).toBe(true);
  });

  it('an unknown field is a 400 naming it, PUT /api/settings included', async () => {
    expectField(await admin('PUT', '/api/settings', { rootDomain: 'example.com', colour: 'blue' }), 400, 'colour', 'settings');
    expectField(await admin('POST', '/api/projects', { name: 'x', nmae: 'typo' }), 400, 'nmae', 'project');
    expectField(
      await admin('POST', `/api/projects/${projectId}/services`, {
        name: 'w2',
        repoFullName: 'a/b',
        env: [{ key: 'A', value: 'b', extra: 1 }],
      }),
      400,
      'env.0.extra',
      'nested',
    );
    expectField(
      await admin('PATCH', `/api/services/${serviceId}`, { repoUrl: 'https://example.com/x.git' }),
      400,
      'repoUrl',
      'not updatable',
    );
  });

  it('a non-empty body that is not declared JSON is a 415; no Content-Type and +json are read as JSON', async () => {
    const post = (contentType: string | undefined, body: string) =>
      fetch(`${server.url}/api/projects`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.token}`, ...(contentType ? { 'content-type': contentType } : {}) },
        body,
      }).then(
        async (r) => ({ status: r.status, json: await r.json().catch(() => undefined), text: '', headers: r.headers }) as ApiResponse,
      );
    expectErrorShape(await post('text/plain', '{"name":"plain"}'), 415, 'text/plain');
    expectErrorShape(await post('application/x-www-form-urlencoded', '{"name":"form"}'), 415, 'form');
    expect((await post('application/json; charset=utf-8', '{"name":"json"}')).status).toBe(201);
    expect((await post('application/merge-patch+json', '{"name":"plus-json"}')).status).toBe(201);
    // fetch adds text/plain to a string body: a raw request without any Content-Type.
    const { text } = await rawExchange(
      `POST /api/projects HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.token}\r\nContent-Length: ${'{"name":"no-type"}'.length}\r\nConnection: close\r\n\r\n{"name":"no-type"}`,
    );
    expect(parseRaw(text).status, text).toBe(201);
  });

  it('a chunked upload over the limit gets 413 with Connection: close, and the connection is closed', async () => {
    const chunk = 'x'.repeat(64 * 1024);
    let payload = `POST /api/projects HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
    for (let sent = 0; sent < 1.2 * 1024 * 1024; sent += chunk.length) payload += `${chunk.length.toString(16)}\r\n${chunk}\r\n`;
    payload += '0\r\n\r\n';
    const started = Date.now();
    const { text, closed } = await rawExchange(payload, 5_000);
    expectRawError(text, 413, 'chunked 413');
    expect(closed, 'the server closed the connection').toBe(true);
    expect(Date.now() - started).toBeLessThan(4_000);
  });
});

describe("rejections at Node's HTTP parser carry the JSON error body", () => {
  it('431 for a head over 16 KB', async () => {
    const { text, closed } = await rawExchange(`GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expectRawError(text, 431, '431');
    expect(closed).toBe(true);
  });

  it('400 for a raw non-ASCII byte or NUL in the path, smuggling, and bad chunk sizes', async () => {
    const cases: Array<[string, Buffer | string]> = [
      ['non-ASCII byte', Buffer.concat([Buffer.from('GET /api/'), Buffer.from([0xff]), Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n')])],
      ['NUL', Buffer.concat([Buffer.from('GET /api/a'), Buffer.from([0]), Buffer.from('b HTTP/1.1\r\nHost: x\r\n\r\n')])],
      ['CL and TE', 'POST /api/projects HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
      ['bad chunk size', 'POST /api/projects HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n'],
      ['space before colon', 'GET /api/health HTTP/1.1\r\nHost : x\r\n\r\n'],
    ];
    for (const [label, payload] of cases) expectRawError((await rawExchange(payload)).text, 400, label);
  });

  it('400 with the JSON body for an HTTP/1.1 request without a Host header, or with an empty or malformed one', async () => {
    for (const [label, payload] of [
      ['no Host', 'GET /api/health HTTP/1.1\r\nConnection: close\r\n\r\n'],
      [
        'no Host, REST',
        `POST /api/projects HTTP/1.1\r\nAuthorization: Bearer ${server.token}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
      ],
      ['no Host, tRPC', 'GET /trpc/system.public HTTP/1.1\r\nConnection: close\r\n\r\n'],
      ['no Host, keep-alive', 'GET /api/health HTTP/1.1\r\n\r\n'],
      ['empty Host', 'GET /api/health HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n'],
      ['Host with a space', 'GET /api/projects HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n'],
      ['Host with a path', 'GET /api/projects HTTP/1.1\r\nHost: a/b\r\nConnection: close\r\n\r\n'],
      ['no Host, terminal upgrade', 'GET /api/services/x/terminal HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n'],
    ] as const) {
      const { text, closed } = await rawExchange(payload);
      expectRawError(text, 400, label);
      expect(parseRaw(text).json.details, label).toEqual({ field: 'host' });
      expect(closed, label).toBe(true);
    }
    // HTTP/1.0 has no Host header to require; a port and an IPv6 literal are hosts.
    for (const payload of [
      'GET /api/health HTTP/1.0\r\n\r\n',
      'GET /api/health HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nConnection: close\r\n\r\n',
      'GET /api/health HTTP/1.1\r\nHost: [::1]:3000\r\nConnection: close\r\n\r\n',
    ]) {
      const { text } = await rawExchange(payload);
      expect(parseRaw(text).status, text).toBe(200);
    }
  });

  it('CONNECT gets an answer', async () => {
    const { text } = await rawExchange('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    expectRawError(text, 404, 'CONNECT');
  });
});

describe('credentials in repoUrl', () => {
  it('are kept as the encrypted git token, and no view shows them', async () => {
    const res = await admin('POST', `/api/projects/${projectId}/services`, {
      name: 'private',
      repoFullName: null,
      repoUrl: 'https://bot:s3cr3t-t0ken@git.example.com/acme/private.git',
    });
    expect(res.status, res.text).toBe(201);
    expect(res.json.service.repoUrl).toBe('https://git.example.com/acme/private.git');
    expect(res.json.service.hasGitToken).toBe(true);
    for (const path of [
      `/api/services/${res.json.service.id}/overview`,
      '/api/projects',
      `/api/projects/${projectId}/database-variable-suggestions`,
    ]) {
      const view = await admin('GET', path);
      expect(view.text, path).not.toContain('s3cr3t-t0ken');
    }
    expect(server.output()).not.toContain('s3cr3t-t0ken');
  });
});

describe('shutdown', () => {
  it('SIGTERM right after a 413 does not wait for that connection', async () => {
    const pending = rawExchange(
      `POST /api/projects HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${`100000\r\n${'y'.repeat(0x100000)}\r\n`}${`100000\r\n${'y'.repeat(0x100000)}\r\n`}`,
      8_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const started = Date.now();
    const code = await server.stop();
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(code).toBe(0);
    await pending;
    expect(server.output()).not.toMatch(/\n\s+at\s/);
  }, 20_000);
});
