import { createTRPCClient, httpBatchLink, httpSubscriptionLink, splitLink, type TRPCClient, type TRPCLink } from '@trpc/client';
import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import { observable } from '@trpc/server/observable';
import { EventSource } from 'eventsource';
import superjson from 'superjson';
import { toSlipwayError } from './errors.js';
import type { AppRouter } from './router.js';

export type { AppRouter } from './router.js';
export { SlipwayError, type SlipwayErrorCode } from './errors.js';

/** Every procedure's input and output, by path: `RouterOutputs['services']['overview']`. */
export type RouterInputs = inferRouterInputs<AppRouter>;
export type RouterOutputs = inferRouterOutputs<AppRouter>;
export type Project = RouterOutputs['projects']['list']['projects'][number];
export type Service = Project['services'][number];
export type ServiceOverview = RouterOutputs['services']['overview'];
export type Deployment = RouterOutputs['deployments']['get']['deployment'];
export type DeploymentLogLine = RouterOutputs['deployments']['logs']['logs'][number];
export type EnvVar = ServiceOverview['env'][number];
export type Domain = ServiceOverview['domains'][number];
export type AuditEntry = RouterOutputs['audit']['list']['entries'][number];
export type PlatformEvent = Extract<
  RouterOutputs['events']['stream'] extends AsyncIterable<infer E> ? E : never,
  { type: 'event' }
>['event'];

export interface ClientOptions {
  /** Where Slipway listens, e.g. `http://127.0.0.1:3000`. */
  url: string;
  /** An API key. */
  token: string;
  /** Passed to every request; defaults to the global fetch. */
  fetch?: typeof fetch;
  /** How long a query or mutation may take before it fails with `timeout` (ms; default 60 000). Streams have none. */
  timeoutMs?: number;
  /** Sent as `x-slipway-client`: the audit log names the door a write came through (`cli` for the CLI). */
  clientName?: string;
}

export type SlipwayClient = TRPCClient<AppRouter>;

/** Every error a call ends with becomes a SlipwayError, whichever link raised it. */
const slipwayErrors: TRPCLink<AppRouter> =
  () =>
  ({ op, next }) =>
    observable((observer) => {
      const subscription = next(op).subscribe({
        next: (value) => observer.next(value),
        error: (error) => observer.error(toSlipwayError(error, op.signal)),
        complete: () => observer.complete(),
      });
      return () => subscription.unsubscribe();
    });

/**
 * The typed client: every procedure of the API with its input and output types
 * (`await client.projects.list.query(undefined, {signal})`), and the log streams as subscriptions
 * (`client.deployments.stream.subscribe({deploymentId}, {onData, signal})`) that reconnect after a
 * dropped connection and resume after the last event they delivered. Every call takes an AbortSignal
 * and throws (or reports to `onError`) a SlipwayError.
 */
export function createClient(options: ClientOptions): SlipwayClient {
  const base = `${options.url.replace(/\/+$/, '')}/trpc`;
  const authorization = `Bearer ${options.token}`;
  const identity: Record<string, string> = options.clientName ? { 'x-slipway-client': options.clientName } : {};
  const baseFetch = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? 60_000;
  // Calls end at the caller's signal or the timeout, whichever comes first; streams only at the caller's.
  const callFetch = ((input: string | URL | Request, init?: RequestInit) => {
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    return baseFetch(input, { ...init, signal });
  }) as typeof fetch;
  return createTRPCClient<AppRouter>({
    links: [
      slipwayErrors,
      splitLink({
        condition: (op) => op.type === 'subscription',
        true: httpSubscriptionLink({
          url: base,
          transformer: superjson,
          // The eventsource package lets us send the key as a header (a browser EventSource cannot), and
          // reconnects after a dropped connection; tRPC then sends the last event id it saw as `lastEventId`.
          EventSource,
          eventSourceOptions: () => ({
            fetch: (input: string | URL | Request, init?: RequestInit) =>
              baseFetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...identity, authorization } }),
          }),
        }),
        false: httpBatchLink({ url: base, transformer: superjson, headers: () => ({ ...identity, authorization }), fetch: callFetch }),
      }),
    ],
  });
}

/**
 * Every project the key may see, following GET /api/projects page by page (`projects.list` answers one
 * page, `limit` projects after `cursor`, and `nextCursor`, null on the last page).
 */
export async function listAllProjects(
  client: SlipwayClient,
  options: { signal?: AbortSignal; pageSize?: number } = {},
): Promise<Project[]> {
  const all: Project[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.projects.list.query(
      { ...(options.pageSize ? { limit: options.pageSize } : {}), ...(cursor ? { cursor } : {}) },
      { signal: options.signal },
    );
    all.push(...page.projects);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return all;
}
