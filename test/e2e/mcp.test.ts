import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { ownPortRange, provisionDocker } from '../helpers/docker.js';

/**
 * The MCP endpoint through the SDK's own client, over both transports: an agent lists the tools,
 * creates a project and a service, deploys it and reads its logs with nothing but tools and resources.
 */
let server: ServerProcess;
let readKey: string;
const clients: Client[] = [];

type Kind = 'streamable' | 'sse';

async function connect(kind: Kind, token: string): Promise<Client> {
  const headers = { authorization: `Bearer ${token}` };
  const transport: Transport =
    kind === 'streamable'
      ? new StreamableHTTPClientTransport(new URL('/api/mcp', server.url), { requestInit: { headers } })
      : new SSEClientTransport(new URL('/api/mcp/sse', server.url), {
          requestInit: { headers },
          eventSourceInit: {
            fetch: (url, init) => fetch(url, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } }),
          },
        });
  const client = new Client({ name: 'slipway-test', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

interface ToolAnswer {
  isError?: boolean;
  structuredContent?: any;
  content: Array<{ type: string; text?: string }>;
}

async function tool(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  onprogress?: (message: string) => void,
): Promise<ToolAnswer> {
  return (await client.callTool({ name, arguments: args }, undefined, {
    timeout: 180_000,
    ...(onprogress ? { onprogress: (p: { message?: string }) => onprogress(p.message ?? ''), resetTimeoutOnProgress: true } : {}),
  })) as ToolAnswer;
}

async function ok(client: Client, name: string, args: Record<string, unknown>): Promise<any> {
  const answer = await tool(client, name, args);
  if (answer.isError) throw new Error(`${name}: ${answer.content[0]?.text}`);
  expect(JSON.parse(answer.content[0]!.text!)).toEqual(answer.structuredContent);
  return answer.structuredContent;
}

beforeAll(async () => {
  await provisionDocker({ images: 'busybox' });
  server = await startServerProcess({
    BUILD_CONCURRENCY: '2',
    STOP_GRACE_SECONDS: '1',
    AUTH_FAILURES_PER_MINUTE: '1000',
    HOST_PORT_RANGE: ownPortRange(),
  });
  readKey = (await api(server.url, server.token)('POST', '/api/api-keys', { name: 'mcp-read', access: 'read' })).json.token;
}, 120_000);

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => {});
  await server?.dispose();
}, 60_000);

describe.each<Kind>(['streamable', 'sse'])('over the %s transport', (kind) => {
  it('lists every operation as a tool, read-only ones marked', async () => {
    const client = await connect(kind, server.token);
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const name of [
      'projects_create',
      'projects_list',
      'services_create',
      'deployments_create',
      'deployments_logs',
      'env_set',
      'deployments_wait',
    ])
      expect(byName.has(name), name).toBe(true);
    expect(byName.get('projects_list')!.annotations?.readOnlyHint).toBe(true);
    expect(byName.get('projects_create')!.annotations?.readOnlyHint).toBe(false);
    expect(byName.get('projects_delete')!.annotations?.destructiveHint).toBe(true);
    const create = byName.get('projects_create')!;
    expect(create.description).toMatch(/POST \/api\/projects/);
    expect(create.inputSchema).toMatchObject({
      type: 'object',
      properties: { name: { type: 'string' } },
      required: ['name'],
      additionalProperties: false,
    });
    // Streams are not tools; the log resources and deployments_wait serve them.
    expect(byName.has('deployments_stream')).toBe(false);
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate).sort()).toEqual([
      'slipway://deployments/{deploymentId}/logs',
      'slipway://services/{serviceId}/runtime-logs',
    ]);
  });

  it('creates a project, deploys a service and reads its logs through tools alone', async () => {
    const client = await connect(kind, server.token);
    const { project } = await ok(client, 'projects_create', { name: `mcp ${kind}` });
    const { service } = await ok(client, 'services_create', {
      projectId: project.id,
      name: 'web',
      repoUrl: 'container-image',
      containerImage: 'busybox:latest',
      internalPort: 3000,
      startCommand: `echo booted-${kind} && mkdir -p /www && echo up > /www/index.html && exec httpd -f -p 3000 -h /www`,
    });
    const { deployment } = await ok(client, 'deployments_create', { serviceId: service.id });
    expect(deployment.status).toBe('queued');
    const progress: string[] = [];
    const waited = await tool(client, 'deployments_wait', { deploymentId: deployment.id, timeoutSeconds: 150 }, (m) => progress.push(m));
    expect(waited.isError, waited.content[0]?.text).toBeFalsy();
    expect(waited.structuredContent).toMatchObject({ finished: true, deployment: { id: deployment.id, status: 'succeeded' } });
    expect(waited.structuredContent.logs.length).toBeGreaterThan(0);
    expect(progress.some((line) => /Starting container/.test(line))).toBe(true);

    const { logs } = await ok(client, 'deployments_logs', { deploymentId: deployment.id });
    expect(logs.map((l: { line: string }) => l.line)).toEqual(expect.arrayContaining([expect.stringMatching(/Starting container/)]));
    const deploymentLog = await client.readResource({ uri: `slipway://deployments/${deployment.id}/logs` });
    expect(deploymentLog.contents[0]).toMatchObject({ mimeType: 'text/plain', text: expect.stringMatching(/Starting container/) });
    const deadline = Date.now() + 20_000;
    for (;;) {
      const runtime = await client.readResource({ uri: `slipway://services/${service.id}/runtime-logs` });
      const text = String((runtime.contents[0] as { text?: string } | undefined)?.text);
      if (text.includes(`booted-${kind}`)) break;
      if (Date.now() > deadline) throw new Error(`runtime log without the boot line: ${text}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    await ok(client, 'projects_delete', { projectId: project.id });
  }, 240_000);

  it('bad arguments are tool errors with the API error body, and the session goes on', async () => {
    const client = await connect(kind, server.token);
    const unknownField = await tool(client, 'projects_create', { name: 'x', colour: 'red' });
    expect(unknownField.isError).toBe(true);
    expect(unknownField.structuredContent).toMatchObject({ error: 'validation_error', details: { field: 'colour' } });
    const wrongType = await tool(client, 'services_overview', { serviceId: 42 });
    expect(wrongType.structuredContent).toMatchObject({ error: 'validation_error', details: { field: 'serviceId' } });
    const missing = await tool(client, 'services_overview', { serviceId: 'doesnotexist0000' });
    expect(missing.structuredContent).toMatchObject({ error: 'not_found' });
    const waitBad = await tool(client, 'deployments_wait', { deploymentId: 'nope', timeoutSeconds: 0 });
    expect(waitBad.structuredContent).toMatchObject({ error: 'validation_error', details: { field: 'timeoutSeconds' } });
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/Unknown tool/);
    await expect(client.readResource({ uri: 'slipway://elsewhere' })).rejects.toThrow(/Unknown resource/);
    expect((await ok(client, 'projects_list', {})).projects).toBeInstanceOf(Array);
  });

  it('a read key sees only the read tools and cannot call a write tool', async () => {
    const client = await connect(kind, readKey);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('projects_list');
    expect(names).toContain('deployments_logs');
    for (const write of ['projects_create', 'deployments_create', 'env_set', 'env_reveal', 'databases_query', 'apiKeys_create'])
      expect(names).not.toContain(write);
    const refused = await tool(client, 'projects_create', { name: 'nope' });
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent).toMatchObject({ error: 'forbidden' });
    const { projects } = await ok(client, 'projects_list', {});
    expect(projects.map((p: { name: string }) => p.name)).not.toContain('nope');
  });
});

describe('the HTTP edge of the endpoint', () => {
  it('401 without a key, 405 for GET on the streamable endpoint, 404 for a session of another key, 403 for a foreign Origin', async () => {
    const anonymous = api(server.url, undefined);
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    };
    const headers = { accept: 'application/json, text/event-stream' };
    const noKey = await anonymous('POST', '/api/mcp', initialize, headers);
    expect(noKey.status).toBe(401);
    expect(noKey.json).toMatchObject({ error: 'unauthorized' });
    expect((await anonymous('GET', '/api/mcp/sse')).status).toBe(401);
    const get = await api(server.url, server.token)('GET', '/api/mcp');
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect(get.json).toMatchObject({ error: 'method_not_allowed' });
    const foreign = await api(server.url, server.token)('POST', '/api/mcp', initialize, { ...headers, origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);

    // An SSE session is its opener's: another key posting to it finds nothing.
    const controller = new AbortController();
    const stream = await fetch(new URL('/api/mcp/sse', server.url), {
      headers: { authorization: `Bearer ${server.token}` },
      signal: controller.signal,
    });
    const reader = stream.body!.getReader();
    let text = '';
    while (!/sessionId=/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
    const endpoint = /data: (\S+)/.exec(text)![1]!;
    const other = await api(server.url, readKey)('POST', endpoint, initialize);
    expect(other.status).toBe(404);
    controller.abort();
  });
});
