import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { AnyTRPCProcedure } from '@trpc/server';
import { appRouter } from '../../routers/app.router.js';
import { needsWriteKey, type Context } from '../../routers/trpc.js';
import { createMcpServer } from '../../adapters/http/mcp-server.js';
import { generateTools } from '../../adapters/http/mcp-tools.js';
import { createHarness, unlimited, type Harness } from '../helpers/harness.js';

/** The MCP server over the router with in-memory SQLite, through the SDK's client and in-memory transport. */
let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.close();
});

async function connect(token: string): Promise<Client> {
  const actor = await h.services.apiKeys.authenticate(token);
  const context = (): Context => ({ services: h.services, token, ip: '127.0.0.1', limiter: unlimited });
  const server = createMcpServer(actor, context, 'test');
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(clientSide);
  return client;
}

describe('tools generated from the router', () => {
  it('one tool per documented procedure, with an object input schema; streams are left to resources', () => {
    const tools = generateTools();
    const documented = Object.entries(appRouter._def.procedures).filter(([, p]) => {
      const def = (p as AnyTRPCProcedure)._def;
      return (def.meta as { openapi?: unknown } | undefined)?.openapi && def.type !== 'subscription';
    });
    expect(tools.map((t) => t.path).sort()).toEqual(documented.map(([path]) => path).sort());
    expect(new Set(tools.map((t) => t.name)).size).toBe(tools.length);
    for (const tool of tools) {
      expect(tool.name, tool.path).toMatch(/^[A-Za-z0-9_]{1,64}$/);
      expect(tool.inputSchema.type, tool.path).toBe('object');
      expect(tool.description.length, tool.path).toBeGreaterThan(10);
    }
  });

  it('marks what needs a write key from the procedure itself', () => {
    const byName = new Map(generateTools().map((t) => [t.name, t]));
    for (const name of ['projects_create', 'env_reveal', 'databases_query', 'deployments_create', 'apiKeys_list', 'terminals_createTicket'])
      expect(byName.get(name)?.needsWrite, name).toBe(true);
    for (const name of ['projects_list', 'deployments_logs', 'services_overview', 'health'])
      expect(byName.get(name)?.needsWrite, name).toBe(false);
    const procedures = appRouter._def.procedures as Record<string, unknown>;
    expect(needsWriteKey(procedures['projects.update'] as AnyTRPCProcedure)).toBe(true);
    expect(needsWriteKey(procedures['projects.list'] as AnyTRPCProcedure)).toBe(false);
    expect(byName.get('projects_list')?.readOnly).toBe(true);
    expect(byName.get('services_delete')?.destructive).toBe(true);
  });
});

describe('the MCP server', () => {
  it('calls procedures with the caller key: results as structured content, refusals as tool errors', async () => {
    const client = await connect(h.adminToken);
    const created = await client.callTool({ name: 'projects_create', arguments: { name: 'Via MCP' } });
    expect(created.isError).toBeFalsy();
    const project = (created.structuredContent as { project: { id: string; name: string } }).project;
    expect(project.name).toBe('Via MCP');
    expect((await h.services.projects.list({ keyId: 'x', access: 'read', projectIds: null })).map((p) => p.id)).toContain(project.id);

    const bad = await client.callTool({ name: 'projects_update', arguments: { projectId: project.id, name: 7 } });
    expect(bad).toMatchObject({ isError: true, structuredContent: { error: 'validation_error', details: { field: 'name' } } });
    const missing = await client.callTool({ name: 'deployments_wait', arguments: { deploymentId: 'doesnotexist0000', timeoutSeconds: 1 } });
    expect(missing).toMatchObject({ isError: true, structuredContent: { error: 'not_found' } });
    const log = await client.readResource({ uri: 'slipway://deployments/doesnotexist0000/logs' }).catch((e: Error) => e);
    expect(String(log)).toMatch(/not found/);
  });

  it('a read key is offered the read tools only, and a write tool is refused as a tool error', async () => {
    const client = await connect(await h.mintKey('read'));
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('projects_list');
    expect(names).toContain('deployments_wait');
    expect(names).not.toContain('projects_create');
    expect(names).not.toContain('databases_query');
    const refused = await client.callTool({ name: 'projects_create', arguments: { name: 'nope' } });
    expect(refused).toMatchObject({ isError: true, structuredContent: { error: 'forbidden' } });
  });

  it('a key deleted mid-session is refused at the next call, as over REST', async () => {
    const token = await h.mintKey('write');
    const client = await connect(token);
    const actor = await h.services.apiKeys.authenticate(token);
    await h.services.apiKeys.delete({ keyId: 'admin', access: 'write', projectIds: null }, actor.keyId);
    const after = await client.callTool({ name: 'projects_list', arguments: {} });
    expect(after).toMatchObject({ isError: true, structuredContent: { error: 'unauthorized' } });
  });
});
