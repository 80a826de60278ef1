import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import SwaggerParser from '@apidevtools/swagger-parser';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

let server: ServerProcess;
beforeAll(async () => {
  server = await startServerProcess();
});
afterAll(async () => {
  await server?.dispose();
});

/** Every method and path of the spec's detailed tables this release implements. */
const DOCUMENTED = [
  'GET /api/projects',
  'POST /api/projects',
  'GET /api/projects/{projectSlug}',
  'PATCH /api/projects/{projectId}',
  'DELETE /api/projects/{projectId}',
  'GET /api/projects/{projectId}/database-variable-suggestions',
  'POST /api/projects/{projectId}/services',
  'GET /api/services/{serviceId}/overview',
  'PATCH /api/services/{serviceId}',
  'POST /api/services/{serviceId}/transfer',
  'DELETE /api/services/{serviceId}',
  'GET /api/services/{serviceId}/suggestion-keys',
  'POST /api/services/{serviceId}/env',
  'DELETE /api/services/{serviceId}/env/{envId}',
  'POST /api/services/{serviceId}/domains',
  'PATCH /api/services/{serviceId}/domains/{domainId}',
  'DELETE /api/services/{serviceId}/domains/{domainId}',
  'POST /api/services/{serviceId}/deployments',
  'GET /api/services/{serviceId}/deployments',
  'POST /api/deployments/{deploymentId}/abort',
  'GET /api/deployments/{deploymentId}/logs',
  'GET /api/deployments/{deploymentId}/stream',
  'GET /api/services/{serviceId}/runtime-logs/stream',
  'POST /api/api-keys',
  'GET /api/api-keys',
  'DELETE /api/api-keys/{id}',
];

describe('OpenAPI document', () => {
  it('is served without a key and accepted by an independent validator', async () => {
    const res = await api(server.url, undefined)('GET', '/api/openapi.json');
    expect(res.status).toBe(200);
    expect(res.json.openapi).toMatch(/^3\.1\./);
    await expect(SwaggerParser.validate(structuredClone(res.json))).resolves.toBeTruthy();
  });

  it('lists every documented path, SSE as text/event-stream, errors as {error, message, details}', async () => {
    const doc = (await api(server.url, undefined)('GET', '/api/openapi.json')).json;
    const listed = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
      Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`),
    );
    for (const entry of DOCUMENTED) expect(listed).toContain(entry);
    expect(Object.keys(doc.paths['/api/deployments/{deploymentId}/stream'].get.responses['200'].content)).toEqual(['text/event-stream']);
    expect(Object.keys(doc.paths['/api/services/{serviceId}/runtime-logs/stream'].get.responses['200'].content)).toEqual([
      'text/event-stream',
    ]);
    expect(doc.components.schemas.Error.required.sort()).toEqual(['details', 'error', 'message']);
    const create = doc.paths['/api/projects'].post;
    expect(create.responses['201']).toBeDefined();
    expect(create.responses['400'].content['application/json'].schema.$ref).toBe('#/components/schemas/Error');
  });

  it('documents 502 upstream_error exactly on the operations that wait on an outside service', async () => {
    const doc = (await api(server.url, undefined)('GET', '/api/openapi.json')).json;
    const with502 = Object.entries(doc.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>)
      .flatMap(([path, item]) => Object.entries(item).map(([m, op]) => (op.responses['502'] ? `${m.toUpperCase()} ${path}` : null)))
      .filter((entry): entry is string => entry !== null)
      .sort();
    expect(with502).toEqual(
      [
        'POST /api/deployments/{deploymentId}/explain-failure',
        'POST /api/deployments/{deploymentId}/diagnostics',
        'POST /api/services/{serviceId}/domains/{domainId}/dns-records',
        'POST /api/services/{serviceId}/database/backups/{backupId}/restore',
        'DELETE /api/services/{serviceId}/database/backups/{backupId}',
        'GET /api/services/{serviceId}/database/backups/{backupId}/download',
      ].sort(),
    );
  });

  it('has a human reference page', async () => {
    const res = await fetch(`${server.url}/api/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    const html = await res.text();
    expect(html).toContain('/api/services/{serviceId}/overview');
    expect(html).toContain('/api/openapi.json');
  });
});
