import { createTRPCClient, httpBatchLink, httpSubscriptionLink, splitLink, type TRPCClient } from '@trpc/client';
import { EventSource } from 'eventsource';
import superjson from 'superjson';
import type { AppRouter } from '../routers/app.router.js';

export type { AppRouter } from '../routers/app.router.js';
export type * from '../src/platform/views.js';

export interface ClientOptions {
  /** Where Slipway listens, e.g. `http://127.0.0.1:3000`. */
  url: string;
  /** An API key. */
  token: string;
  /** Passed to every request; defaults to the global fetch. */
  fetch?: typeof fetch;
}

export type SlipwayClient = TRPCClient<AppRouter>;

/**
 * The typed client: every procedure of the API with its input and output types, and the log
 * streams as subscriptions (`client.deployments.stream.subscribe({deploymentId}, {onData})`).
 */
export function createClient(options: ClientOptions): SlipwayClient {
  const base = `${options.url.replace(/\/+$/, '')}/trpc`;
  const authorization = `Bearer ${options.token}`;
  const baseFetch = options.fetch ?? fetch;
  return createTRPCClient<AppRouter>({
    links: [
      splitLink({
        condition: (op) => op.type === 'subscription',
        true: httpSubscriptionLink({
          url: base,
          transformer: superjson,
          // Node 20 has no global EventSource; the eventsource package lets us send the key as a header.
          EventSource,
          eventSourceOptions: () => ({
            fetch: (input: string | URL | Request, init?: RequestInit) =>
              baseFetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization } }),
          }),
        }),
        false: httpBatchLink({ url: base, transformer: superjson, headers: () => ({ authorization }), fetch: baseFetch }),
      }),
    ],
  });
}
