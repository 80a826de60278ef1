import { z } from 'zod';
import { generateOpenApiDocument, type OpenAPIObject } from 'trpc-to-openapi';
import { createSchema } from 'zod-openapi';
import { deploymentLogView, runtimeLogView, SCOPE_DESCRIPTIONS, type ProcedureScope } from '../../src/index.js';
import type { AppRouter } from '../../routers/app.router.js';
import { DOCUMENTED_BODIES, TRUSTED_OUTPUTS } from '../../routers/schemas.js';
import { errorView, proceduresOf, type DownloadMeta, type SseMeta } from '../../routers/trpc.js';
import { BODY_METHODS } from './request-body.js';
import { SESSION_COOKIE } from './session-cookie.js';

const ERROR_STATUSES: Record<string, string> = {
  '400': 'Validation error: `details.field` names the first offending field',
  '401': 'Missing, unknown, expired or revoked credentials (`unauthorized`); `invalid_credentials` for a failed sign-in',
  '403':
    'The key lacks the access level or project scope, the user the role, or the token the scope (`insufficient_scope`, `details.scope`)',
  '404': 'Not found',
  '409': 'Conflict with the current state',
  '429': 'Rate limited; see Retry-After',
  '500': 'Internal error',
};

/** What the HTTP edge answers before any procedure: 431 to any request, 413 and 415 to one whose body it reads. */
const EDGE_STATUSES: Array<[status: string, description: string, bodyOnly: boolean]> = [
  [
    '413',
    '`payload_too_large`: the request body is larger than the limit (BODY_LIMIT_BYTES, 1 MiB by default; `details.limitBytes`)',
    true,
  ],
  ['415', '`unsupported_media_type`: a non-empty body not declared JSON (`application/json` or a `+json` type)', true],
  ['431', '`payload_too_large`: the request head (request line and headers) is larger than 16 KB', false],
];

/** A procedure served over SSE (`meta.sse`): a GET answering `text/event-stream`. */
const ssePath = ({ path, summary, description }: SseMeta, scope: ProcedureScope | undefined) => ({
  get: {
    tags: ['Streams'],
    summary,
    description,
    security: securityOf(scope),
    'x-required-scope': scope,
    requestParams: {
      path: z.object(Object.fromEntries([...path.matchAll(/\{(\w+)\}/g)].map(([, name]) => [name!, z.string()]))),
      header: z.object({ 'last-event-id': z.string().optional().meta({ description: 'Resume after this event id' }) }),
    },
    responses: {
      '200': {
        description,
        content: {
          'text/event-stream': { schema: z.string().meta({ description: 'Server-Sent Events: `event:` and `data:` (JSON) lines' }) },
        },
      },
    },
  },
});

/** A procedure whose answer is a file (`meta.download`): a GET answering its bytes. */
const downloadPath = ({ path, summary, description, contentType, tags }: DownloadMeta, scope: ProcedureScope | undefined) => ({
  get: {
    tags: tags ?? ['Files'],
    summary,
    description,
    security: securityOf(scope),
    requestParams: { path: z.object(Object.fromEntries([...path.matchAll(/\{(\w+)\}/g)].map(([, name]) => [name!, z.string()]))) },
    responses: {
      '200': {
        description,
        headers: {
          'Content-Length': { schema: { type: 'integer' } },
          'Content-Disposition': { schema: { type: 'string' }, description: '`attachment; filename="..."`' },
        },
        content: { [contentType ?? 'application/octet-stream']: { schema: z.string().meta({ format: 'binary' }) } },
      },
    },
  },
});

/**
 * Either credential, with the personal-token scope the operation needs (`session` operations list
 * none: a signed-in session only, see `x-required-scope`).
 */
function securityOf(scope: ProcedureScope | undefined): Array<Record<string, string[]>> {
  const scopes = scope && scope !== 'session' && scope !== 'public' ? [scope] : [];
  return [{ bearerAuth: scopes }, { cookieAuth: scopes }];
}

const SECURITY_SCHEMES = {
  bearerAuth: {
    type: 'http',
    scheme: 'bearer',
    description:
      'An API key (`slw_...`, or the BOOTSTRAP_API_KEY), a session token from POST /api/auth/signin (`slw_ses_...`) or a personal token (`slw_pat_...`), limited to its scopes: ' +
      Object.entries(SCOPE_DESCRIPTIONS)
        .map(([scope, what]) => `\`${scope}\` ${what}`)
        .join('; '),
  },
  cookieAuth: { type: 'apiKey', in: 'cookie', name: SESSION_COOKIE, description: 'The session cookie set by POST /api/auth/signin' },
} as const;

/** The OpenAPI 3.1 document, generated from the routers, with the SSE paths their procedures declare. */
export function buildOpenApiDocument(router: AppRouter, baseUrl: string): OpenAPIObject {
  const procedures = proceduresOf(router);
  const doc = generateOpenApiDocument(router, {
    title: 'Slipway Platform API',
    description:
      'Projects, services, environment variables, domains and deployments of a self-hosted Slipway install. ' +
      'Every call but /api/health, /api/system/public, /api/openapi.json, /api/docs and the public /api/auth/* ones needs `Authorization: Bearer <credential>` ' +
      '(an API key, a session token or a personal token) or the session cookie; `x-required-scope` names the personal-token scope each operation needs. ' +
      'Errors are `{error, message, details}`. The typed TypeScript client (`@slipway/client`, with the `slipway` CLI) calls the same procedures over tRPC at /trpc.',
    version: '1.0.0',
    baseUrl,
    securitySchemes: SECURITY_SCHEMES,
    defs: { Error: errorView, DeploymentLogLine: deploymentLogView, RuntimeLogLine: runtimeLogView, ...TRUSTED_OUTPUTS },
    paths: Object.fromEntries(
      procedures.flatMap(({ meta: { sse, download, scope } }) => [
        ...(sse ? [[sse.path, ssePath(sse, scope)] as const] : []),
        ...(download ? [[download.path, downloadPath(download, scope)] as const] : []),
      ]),
    ),
  });
  // Rendered as request bodies are (`input`): a component of createDocument's would be rendered as an output too.
  const schemas = doc.components?.schemas ?? {};
  for (const [id, schema] of Object.entries(DOCUMENTED_BODIES)) {
    const { schema: json, components } = createSchema(schema, { io: 'input', openapiVersion: '3.1.0' });
    Object.assign(schemas, components, { [id]: json });
  }
  doc.components = { ...doc.components, schemas };
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, operation] of Object.entries(
      item as Record<
        string,
        { responses?: Record<string, unknown>; security?: unknown[]; requestBody?: { content?: Record<string, { schema?: unknown }> } }
      >,
    )) {
      if (!operation || typeof operation !== 'object' || !operation.responses) continue;
      const responses = operation.responses;
      const meta = procedures.find(
        ({ meta }) =>
          (meta.openapi?.path === path && meta.openapi.method.toLowerCase() === method) ||
          (meta.download?.path === path && method === 'get'),
      )?.meta;
      const json = operation.requestBody?.content?.['application/json'];
      if (meta?.body && json) json.schema = meta.body;
      if (meta?.scope && meta.scope !== 'public') {
        operation.security = securityOf(meta.scope);
        (operation as Record<string, unknown>)['x-required-scope'] = meta.scope;
      }
      for (const status of Object.keys(responses)) if (Number(status) >= 400) delete responses[status];
      const statuses = operation.security?.length || meta?.rateLimit ? Object.keys(ERROR_STATUSES) : ['400', '404', '500'];
      for (const status of statuses) {
        if (status === '409' && method === 'get') continue;
        responses[status] = {
          description: ERROR_STATUSES[status],
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
        };
      }
      for (const [status, description, bodyOnly] of EDGE_STATUSES) {
        if (bodyOnly && !BODY_METHODS.has(method.toUpperCase())) continue;
        responses[status] = { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
      }
      if (meta?.upstream)
        responses['502'] = {
          description: `\`upstream_error\`: ${meta.upstream} failed, timed out or answered outside its contract`,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
        };
      const created = procedures.some(
        ({ meta }) => meta.created && meta.openapi?.path === path && meta.openapi.method.toLowerCase() === method,
      );
      if (created && responses['200']) {
        responses['201'] = responses['200'];
        delete responses['200'];
      }
    }
  }
  return doc;
}

const escapeHtml = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

/** A self-contained reference page (no CDN: installs may be offline), rendered from the document. */
export function renderDocsPage(doc: OpenAPIObject): string {
  const rows: string[] = [];
  const byTag = new Map<string, string[]>();
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(
      item as Record<
        string,
        { summary?: string; description?: string; tags?: string[]; requestBody?: unknown; responses?: Record<string, unknown> }
      >,
    )) {
      if (!op || typeof op !== 'object' || !('responses' in op)) continue;
      const tag = op.tags?.[0] ?? 'Other';
      const statuses = Object.keys(op.responses ?? {}).join(' ');
      const body = op.requestBody
        ? `<details><summary>request body</summary><pre>${escapeHtml(JSON.stringify(op.requestBody, null, 2))}</pre></details>`
        : '';
      const html = `<tr><td><code class="m ${method}">${method.toUpperCase()}</code></td><td><code>${escapeHtml(path)}</code></td><td>${escapeHtml(op.summary ?? '')}${op.description ? `<br><small>${escapeHtml(op.description)}</small>` : ''}${body}</td><td><small>${statuses}</small></td></tr>`;
      byTag.set(tag, [...(byTag.get(tag) ?? []), html]);
    }
  }
  for (const [tag, html] of byTag)
    rows.push(
      `<h2>${escapeHtml(tag)}</h2><table><tr><th>method</th><th>path</th><th>what</th><th>statuses</th></tr>${html.join('')}</table>`,
    );
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(doc.info.title)}</title>
<style>body{font:14px/1.45 system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#1b1f24}table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.4em;text-align:left;vertical-align:top}code.m{font-weight:700}.get{color:#0a7}.post{color:#06c}.patch{color:#a60}.delete{color:#c22}pre{background:#f5f5f5;padding:.5em;overflow:auto}</style></head>
<body><h1>${escapeHtml(doc.info.title)} <small>${escapeHtml(doc.info.version)}</small></h1><p>${escapeHtml(doc.info.description ?? '')}</p>
<p>Machine-readable: <a href="/api/openapi.json">/api/openapi.json</a> (OpenAPI ${escapeHtml(doc.openapi)}). Error body: <code>{"error": "validation_error", "message": "...", "details": {"field": "name"}}</code>.</p>
${rows.join('\n')}</body></html>`;
}
