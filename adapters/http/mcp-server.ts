import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { ForbiddenError } from '../../src/domain/errors.js';
import { assertProcedureScope, type Actor } from '../../src/domain/access.js';
import { toErrorBody, type Context } from '../../routers/trpc.js';
import { callProcedure, generateTools, type GeneratedTool } from './mcp-tools.js';

const WAIT_TOOL = 'deployments_wait';
const waitInput = z.strictObject({
  deploymentId: z.string().min(1).max(64),
  timeoutSeconds: z.number().int().min(1).max(600).default(120),
  logLines: z.number().int().min(0).max(2000).default(200),
});

const DEPLOYMENT_LOGS = /^slipway:\/\/deployments\/([a-z0-9]{1,64})\/logs$/;
const RUNTIME_LOGS = /^slipway:\/\/services\/([a-z0-9]{1,64})\/runtime-logs$/;
/** How long a runtime-log read waits for the container's recent lines. */
const RUNTIME_SNAPSHOT_MS = 5_000;

let generated: GeneratedTool[] | undefined;
/** Generated once per process: the router does not change while it runs. */
function tools(): GeneratedTool[] {
  generated ??= generateTools();
  return generated;
}

/**
 * Why the caller may not call a tool, or null: a read key is offered the tools a read key can call,
 * and a personal token the tools its scopes allow (the same check as REST: assertProcedureScope).
 */
function refusal(actor: Actor, tool: GeneratedTool): Error | null {
  if (tool.needsWrite && actor.access !== 'write') return new ForbiddenError('This API key is read-only; this tool needs a write key');
  try {
    assertProcedureScope(actor, tool.scope);
    return null;
  } catch (error) {
    return error as Error;
  }
}

function visibleTo(actor: Actor): GeneratedTool[] {
  return tools().filter((tool) => !refusal(actor, tool));
}

function toolOf(tool: GeneratedTool): Tool {
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: tool.inputSchema,
    annotations: { title: tool.title, readOnlyHint: tool.readOnly, destructiveHint: tool.destructive, openWorldHint: false },
  };
}

const waitTool: Tool = {
  name: WAIT_TOOL,
  title: 'Wait for a deployment to finish',
  description:
    'Follows a deployment (as returned by deployments_create) until it succeeds, fails or is aborted, or `timeoutSeconds` pass. Each new log line is sent as a progress notification when the call carries a progress token; the result is the deployment and its last `logLines` log lines (`finished: false` on timeout: call again to keep waiting).',
  inputSchema: z.toJSONSchema(waitInput, { io: 'input' }) as Tool['inputSchema'],
  annotations: { title: 'Wait for a deployment to finish', readOnlyHint: true, openWorldHint: false },
};

function result(value: unknown): CallToolResult {
  const structured = value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  return { content: [{ type: 'text', text: JSON.stringify(value ?? null) }], ...(structured ? { structuredContent: structured } : {}) };
}

/** A refused call is a tool result with the API's error body: the session goes on. */
function failure(error: unknown): CallToolResult {
  const body = toErrorBody(error);
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: { ...body } };
}

/** tRPC wraps `tracked()` events as `[id, data, symbol]`. */
function untracked(event: unknown): { type?: string; line?: { line: string }; lines?: Array<{ line: string }> } {
  return (Array.isArray(event) && event.length === 3 ? event[1] : event) as ReturnType<typeof untracked>;
}

/**
 * An MCP server for one caller: its tools are the router's procedures, called through the same
 * caller REST uses with the caller's own key, so every rule (access, scope, limits) is the API's.
 * `context()` gives a fresh request context for each call.
 */
export function createMcpServer(actor: Actor, context: () => Context, version: string): Server {
  const server = new Server(
    { name: 'slipway', version },
    {
      capabilities: { tools: { listChanged: false }, resources: {} },
      instructions:
        'Slipway: projects, services, deployments, environment, domains and databases. Tools mirror the REST API one to one. A deployment runs in the background: deployments_create returns its id; deployments_wait follows it. Logs are also resources: slipway://deployments/{id}/logs and slipway://services/{id}/runtime-logs.',
    },
  );

  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...visibleTo(actor).map(toolOf), waitTool] }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args } = request.params;
    if (name === WAIT_TOOL) return waitForDeployment(context(), args, extra);
    const tool = tools().find((t) => t.name === name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool ${JSON.stringify(name).slice(0, 200)}`);
    const refused = refusal(actor, tool);
    if (refused) return failure(refused);
    try {
      return result(await callProcedure(context(), tool.path, args ?? {}));
    } catch (error) {
      return failure(error);
    }
  });

  server.setRequestHandler(ListResourcesRequestSchema, () => ({ resources: [] }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: [
      {
        uriTemplate: 'slipway://deployments/{deploymentId}/logs',
        name: 'deployment-logs',
        title: 'Deployment log',
        description: 'Every log line of a deployment so far, one per line.',
        mimeType: 'text/plain',
      },
      {
        uriTemplate: 'slipway://services/{serviceId}/runtime-logs',
        name: 'runtime-logs',
        title: 'Runtime log',
        description: "The recent output of the service's running container, one line per line.",
        mimeType: 'text/plain',
      },
    ],
  }));

  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const { uri } = request.params;
    const text = async (): Promise<string> => {
      const deployment = DEPLOYMENT_LOGS.exec(uri);
      if (deployment) {
        const { logs } = (await callProcedure(context(), 'deployments.logs', { deploymentId: deployment[1] })) as {
          logs: Array<{ line: string }>;
        };
        return logs.map((l) => l.line).join('\n');
      }
      const runtime = RUNTIME_LOGS.exec(uri);
      if (runtime) return runtimeSnapshot(context(), runtime[1]!);
      throw new McpError(ErrorCode.InvalidParams, `Unknown resource ${uri.slice(0, 200)}`);
    };
    try {
      return { contents: [{ uri, mimeType: 'text/plain', text: await text() }] };
    } catch (error) {
      if (error instanceof McpError) throw error;
      const body = toErrorBody(error);
      throw new McpError(body.error === 'not_found' ? -32002 : ErrorCode.InvalidRequest, body.message, body);
    }
  });

  return server;
}

async function waitForDeployment(
  ctx: Context,
  args: unknown,
  extra: { signal: AbortSignal; _meta?: { progressToken?: string | number }; sendNotification: (n: never) => Promise<void> },
): Promise<CallToolResult> {
  const parsed = waitInput.safeParse(args ?? {});
  if (!parsed.success) return failure(parsed.error);
  const { deploymentId, timeoutSeconds, logLines } = parsed.data;
  const timedOut = AbortSignal.timeout(timeoutSeconds * 1000);
  const signal = AbortSignal.any([extra.signal, timedOut]);
  const progressToken = extra._meta?.progressToken;
  const lines: string[] = [];
  let sent = 0;
  const keep = (line: string) => {
    lines.push(line);
    if (lines.length > logLines) lines.shift();
  };
  try {
    const events = (await callProcedure(ctx, 'deployments.stream', { deploymentId }, signal)) as AsyncIterable<unknown>;
    for await (const raw of events) {
      const event = untracked(raw);
      const fresh = event.type === 'snapshot' ? (event.lines ?? []) : event.type === 'log' && event.line ? [event.line] : [];
      for (const line of fresh) {
        keep(line.line);
        if (progressToken !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken, progress: ++sent, message: line.line },
          } as never);
        }
      }
    }
  } catch (error) {
    if (!signal.aborted) return failure(error);
  }
  try {
    const { deployment } = (await callProcedure(ctx, 'deployments.get', { deploymentId })) as { deployment: { status: string } };
    const finished = ['succeeded', 'failed', 'aborted'].includes(deployment.status);
    return result({ deployment, finished, logs: logLines === 0 ? [] : lines });
  } catch (error) {
    return failure(error);
  }
}

/** The runtime log stream's first answer (its snapshot), then the stream is closed. */
async function runtimeSnapshot(ctx: Context, serviceId: string): Promise<string> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), RUNTIME_SNAPSHOT_MS);
  const lines: string[] = [];
  try {
    const events = (await callProcedure(ctx, 'deployments.runtimeLogs', { serviceId }, controller.signal)) as AsyncIterable<unknown>;
    for await (const raw of events) {
      const event = untracked(raw) as { type?: string; lines?: Array<{ line: string }>; ok?: boolean; reason?: string };
      if (event.type === 'snapshot') lines.push(...(event.lines ?? []).map((l) => l.line));
      if (event.type === 'status') {
        if (!event.ok && lines.length === 0) lines.push(`(no running container${event.reason ? `: ${event.reason}` : ''})`);
        break;
      }
    }
  } catch (error) {
    if (!controller.signal.aborted) throw error;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return lines.join('\n');
}
