import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { astToString, openapiTS } from '../openapi-client/index.js';
import { ok } from '../helpers/http.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

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
        // A volume's backups, as a database's: restore, delete and download may wait on the object store.
        'POST /api/services/{serviceId}/volumes/{name}/backups/{backupId}/restore',
        'DELETE /api/services/{serviceId}/volumes/{name}/backups/{backupId}',
        'GET /api/services/{serviceId}/volumes/{name}/backups/{backupId}/download',
        // An external registry is checked with its credentials before it is saved.
        'PUT /api/registry',
      ].sort(),
    );
  });

  it('documents 413 and 415 on every operation that reads a body, and 431 on every operation, as the edge answers them', async () => {
    const doc = (await api(server.url, undefined)('GET', '/api/openapi.json')).json;
    const errorRef = { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } };
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, { responses: Record<string, any> }>>)) {
      for (const [method, { responses }] of Object.entries(item)) {
        const readsBody = ['post', 'put', 'patch', 'delete'].includes(method);
        expect(responses['413']?.content, `${method} ${path} 413`).toEqual(readsBody ? errorRef : undefined);
        expect(responses['415']?.content, `${method} ${path} 415`).toEqual(readsBody ? errorRef : undefined);
        expect(responses['431']?.content, `${method} ${path} 431`).toEqual(errorRef);
      }
    }
    // What the document promises for POST /api/projects, the server answers.
    const post = (body: string, headers: Record<string, string>) =>
      fetch(`${server.url}/api/projects`, { method: 'POST', headers: { authorization: `Bearer ${server.token}`, ...headers }, body });
    const answers = [
      await post(`{"name":"${'a'.repeat(1024 * 1024)}"}`, { 'content-type': 'application/json' }),
      await post('{"name":"x"}', { 'content-type': 'text/plain' }),
      await post('{"name":"x"}', { 'content-type': 'application/json', 'x-big': 'a'.repeat(20_000) }),
    ];
    expect(answers.map((res) => res.status)).toEqual([413, 415, 431]);
    for (const res of answers) expect(Object.keys(await res.json()).sort()).toEqual(['details', 'error', 'message']);
    expect(Object.keys(doc.paths['/api/projects'].post.responses)).toEqual(expect.arrayContaining(['413', '415', '431']));
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

/** The two operations that create a service from a body whose source is a union (repository, image, database). */
const CREATE_PATHS = ['/api/projects/{projectId}/services', '/api/environments/{environmentId}/apps'] as const;

/**
 * A client generated from the running server's document, as its users make one: openapi-typescript for the
 * types, openapi-fetch for the calls, checked by strict tsc. `// @ts-expect-error` marks the bodies the
 * document must refuse (the issue's three): tsc fails when one of them type-checks, or when a body the
 * server takes does not.
 */
function generatedClientSource(): string {
  const calls = (where: 'project' | 'environment') => {
    const [url, param] = where === 'project' ? [CREATE_PATHS[0], 'projectId'] : [CREATE_PATHS[1], 'environmentId'];
    const call = (body: string) => `api.POST('${url}', { params: { path: { ${param}: id } }, body: ${body} })`;
    return `
export async function acceptedIn${where === 'project' ? 'Project' : 'Environment'}(api: Api, id: string) {
  return [
    await ${call(`{ name: 'by-name', repoFullName: 'acme/web' }`)},
    await ${call(`{ name: 'by-url', repoFullName: null, repoUrl: 'https://git.example.com/acme/web.git', branch: 'main' }`)},
    await ${call(`{ name: 'by-both', repoFullName: 'acme/web', repoUrl: 'git@git.example.com:acme/web.git', buildMethod: 'dockerfile' }`)},
    await ${call(`{ name: 'image', repoUrl: 'container-image', containerImage: 'busybox:latest', internalPort: 3000, runtimeMode: 'worker' }`)},
    await ${call(`{ name: 'db', repoUrl: 'database', repoFullName: 'database:redis', databasePublicEnabled: false }`)},
  ];
}

export async function refusedIn${where === 'project' ? 'Project' : 'Environment'}(api: Api, id: string) {
  return [
    // @ts-expect-error a service with no source
    await ${call(`{ name: 'only-a-name' }`)},
    // @ts-expect-error an image without the container-image marker
    await ${call(`{ name: 'image-without-marker', containerImage: 'busybox:latest' }`)},
    // @ts-expect-error the container-image marker without an image
    await ${call(`{ name: 'marker-without-image', repoUrl: 'container-image' }`)},
  ];
}
`;
  };
  return `import createClient from 'openapi-fetch';
import type { paths } from './api.js';

export type Api = ReturnType<typeof createClient<paths>>;

export function connect(baseUrl: string, token: string): Api {
  return createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${token}\` } });
}
${calls('project')}${calls('environment')}`;
}

describe('create-service bodies: the document, a client generated from it and the server agree', () => {
  let projectId: string;
  let environmentId: string;
  let doc: any;
  beforeAll(async () => {
    const admin = api(server.url, server.token);
    projectId = (await ok(admin('POST', '/api/projects', { name: 'Generated client' }), 'project')).project.id;
    environmentId = (await ok(admin('GET', `/api/projects/${projectId}/environments`), 'environments')).environments[0].id;
    doc = (await api(server.url, undefined)('GET', '/api/openapi.json')).json;
  });

  it('the source is a oneOf: repository (by owner/name or by Git URL), image or database, its discriminating fields required', () => {
    for (const url of CREATE_PATHS) {
      const schema = resolve(doc, doc.paths[url].post.requestBody.content['application/json'].schema);
      expect(schema.oneOf, url).toHaveLength(4);
      const branches = schema.oneOf.map((branch: any) => resolve(doc, branch));
      const required = branches.map((branch: any) => [...branch.required].sort());
      expect(required, url).toEqual([
        ['name', 'repoFullName'],
        ['name', 'repoFullName', 'repoUrl'],
        ['containerImage', 'name', 'repoUrl'],
        ['name', 'repoFullName', 'repoUrl'],
      ]);
      expect(branches.map((branch: any) => branch.properties.repoUrl.const ?? null)).toEqual([null, null, 'container-image', 'database']);
      for (const branch of branches) expect(branch.additionalProperties, url).toBe(false);
    }
  });

  it("under strict tsc the issue's three bodies do not type-check, and what type-checks the server accepts", async () => {
    mkdirSync(path.join(ROOT, 'test/openapi-client/.test-cache'), { recursive: true });
    const dir = mkdtempSync(path.join(ROOT, 'test/openapi-client/.test-cache/generated-'));
    try {
      writeFileSync(path.join(dir, 'api.d.ts'), astToString(await openapiTS(doc)));
      writeFileSync(path.join(dir, 'client.ts'), generatedClientSource());
      writeFileSync(
        path.join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            target: 'ES2022',
            lib: ['ES2022', 'DOM'],
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            types: [],
            noEmit: true,
          },
          files: ['client.ts'],
        }),
      );
      try {
        execFileSync(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], {
          encoding: 'utf8',
          stdio: 'pipe',
        });
      } catch (error) {
        const { stdout, stderr } = error as { stdout: string; stderr: string };
        expect.fail(`tsc refused the generated client:\n${stdout}${stderr}`);
      }

      const client = await import(pathToFileURL(path.join(dir, 'client.ts')).href);
      const generated = client.connect(server.url, server.token);
      for (const [label, answers] of [
        ['project', await client.acceptedInProject(generated, projectId)],
        ['environment', await client.acceptedInEnvironment(generated, environmentId)],
      ] as const) {
        for (const { response, data, error } of answers)
          expect(response.status, `${label}: ${JSON.stringify(error)}`).toBe(201), expect(data.service.id).toBeTruthy();
      }
      for (const answers of [
        await client.refusedInProject(generated, projectId),
        await client.refusedInEnvironment(generated, environmentId),
      ]) {
        for (const { response, error } of answers) expect([response.status, error.error]).toEqual([400, 'validation_error']);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('a body the document accepts (JSON Schema, as a validating proxy reads it) is one the server accepts, and the converse', async () => {
    const ajv = new Ajv2020({ strict: false, allErrors: false });
    ajv.addSchema({ $id: 'slipway-openapi', components: doc.components });
    const admin = api(server.url, server.token);
    const bodies: Array<Record<string, unknown>> = [
      { repoFullName: 'acme/web' },
      { repoFullName: 'acme/web', repoUrl: null, containerImage: null },
      { repoFullName: null, repoUrl: 'https://git.example.com/acme/web.git' },
      { repoFullName: null, repoUrl: 'ssh://git@git.example.com/acme/web.git', containerImage: null, gitToken: 'tok' },
      { repoUrl: 'container-image', containerImage: 'ghcr.io/acme/cache:1.2' },
      { repoUrl: 'container-image', containerImage: 'busybox:latest', repoFullName: null },
      { repoUrl: 'database', repoFullName: 'database:postgres', postgresLogicalReplicationEnabled: true },
      { repoUrl: 'database', repoFullName: 'database:mongodb', containerImage: null },
      // What a form sends for an empty field: "" is no value, as null is.
      { repoFullName: '', repoUrl: 'https://git.example.com/acme/web.git', containerImage: '' },
      { repoFullName: 'acme/web', repoUrl: '' },
      { repoUrl: 'container-image', containerImage: 'busybox:latest', repoFullName: '' },
      { repoFullName: '' },
      { repoFullName: '', repoUrl: '' },
      { repoUrl: 'container-image', containerImage: '' },
      {},
      { containerImage: 'busybox:latest' },
      { repoUrl: 'container-image' },
      { repoUrl: 'container-image', containerImage: null },
      { repoUrl: 'container-image', containerImage: 'UPPER/case' },
      { repoUrl: 'container-image', containerImage: 'busybox:latest', repoFullName: 'acme/web' },
      { repoUrl: 'https://git.example.com/acme/web.git' },
      { repoFullName: null },
      { repoFullName: null, repoUrl: null },
      { repoFullName: null, repoUrl: 'file:///etc' },
      { repoFullName: null, repoUrl: 'container-image' },
      { repoFullName: 'not a repo' },
      { repoFullName: 'acme/web', containerImage: 'busybox:latest' },
      { repoFullName: 'acme/web', repoUrl: 'database' },
      { repoFullName: 'database:postgres' },
      { repoUrl: 'database' },
      { repoUrl: 'database', repoFullName: 'database:oracle' },
      { repoUrl: 'database', repoFullName: 'acme/web' },
      { repoUrl: 'database', repoFullName: 'database:redis', containerImage: 'redis:7' },
      { repoUrl: 'storage', repoFullName: 'storage:s3' },
      { repoFullName: 'acme/web', colour: 'blue' },
    ];
    let n = 0;
    for (const url of CREATE_PATHS) {
      const schema = doc.paths[url].post.requestBody.content['application/json'].schema;
      const validate = ajv.compile(schema.$ref ? { $ref: `slipway-openapi${schema.$ref}` } : schema);
      const at = url.replace('{projectId}', projectId).replace('{environmentId}', environmentId);
      for (const source of bodies) {
        const body = { name: `agree-${++n}`, ...source };
        const res = await admin('POST', at, body);
        expect([201, 400], res.text).toContain(res.status);
        expect(validate(body), `${url} ${JSON.stringify(source)}: the server answered ${res.status} ${res.text.slice(0, 200)}`).toBe(
          res.status === 201,
        );
      }
    }
  }, 120_000);
});

/** A schema with its `$ref` (to the document's components) followed. */
function resolve(doc: any, schema: any): any {
  if (!schema?.$ref) return schema;
  return (schema.$ref as string)
    .replace(/^#\//, '')
    .split('/')
    .reduce((node: any, key: string) => node[key], doc);
}
