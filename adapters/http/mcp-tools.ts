import type { AnyTRPCProcedure } from '@trpc/server';
import { z } from 'zod';
import { appRouter, createCaller } from '../../routers/app.router.js';
import { needsWriteKey, type Context, type SlipwayMeta } from '../../routers/trpc.js';
import type { ProcedureScope } from '../../src/index.js';

/** One procedure of the router, offered as an MCP tool. */
export interface GeneratedTool {
  name: string;
  /** The procedure's path in the router (`projects.create`). */
  path: string;
  title: string;
  description: string;
  inputSchema: { type: 'object'; [key: string]: unknown };
  readOnly: boolean;
  destructive: boolean;
  needsWrite: boolean;
  /** The personal-token scope its procedure declares (`meta.scope`). */
  scope: ProcedureScope | undefined;
}

const EMPTY_OBJECT = { type: 'object' as const, properties: {}, additionalProperties: false };

/** The zod input as JSON Schema (what the tool's caller sends); an input that is not an object takes none. */
function inputSchemaOf(procedure: AnyTRPCProcedure): GeneratedTool['inputSchema'] {
  const input = (procedure._def as unknown as { inputs?: z.ZodType[] }).inputs?.[0];
  if (!input) return EMPTY_OBJECT;
  const schema = z.toJSONSchema(input, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete schema.$schema;
  return schema.type === 'object' ? (schema as GeneratedTool['inputSchema']) : EMPTY_OBJECT;
}

/**
 * Every documented procedure of the router as a tool: name, description and input come from the
 * procedure itself, so a new procedure is a new tool with no code here. Streams (SSE procedures)
 * are not tools: `deployments_wait` and the log resources serve them.
 */
export function generateTools(): GeneratedTool[] {
  const tools: GeneratedTool[] = [];
  for (const [path, value] of Object.entries(appRouter._def.procedures)) {
    const procedure = value as AnyTRPCProcedure;
    const meta = (procedure._def.meta ?? {}) as SlipwayMeta;
    if (!meta.openapi || procedure._def.type === 'subscription') continue;
    const { method, path: restPath, summary, description } = meta.openapi;
    tools.push({
      name: path.replaceAll('.', '_'),
      path,
      title: summary ?? path,
      description: [summary, description, `REST: ${method} ${restPath}.`].filter(Boolean).join('\n\n'),
      inputSchema: inputSchemaOf(procedure),
      readOnly: method === 'GET',
      destructive: method === 'DELETE',
      needsWrite: needsWriteKey(procedure),
      scope: meta.scope,
    });
  }
  return tools.sort((a, b) => a.name.localeCompare(b.name));
}

/** Calls the procedure at `path` exactly as REST would: same context, same key, same checks. */
export async function callProcedure(ctx: Context, path: string, input: unknown, signal?: AbortSignal): Promise<unknown> {
  let target: unknown = createCaller(ctx);
  for (const part of path.split('.')) target = (target as Record<string, unknown>)[part];
  return (target as (input: unknown, opts?: { signal?: AbortSignal }) => Promise<unknown>)(input, signal ? { signal } : undefined);
}
