import type { AppRouter, RouterInputs, RouterOutputs } from '@slipway/client';
import { createTRPCClient, httpBatchLink, httpSubscriptionLink, splitLink } from '@trpc/client';
import { createTRPCContext } from '@trpc/tanstack-react-query';
import { QueryClient } from '@tanstack/react-query';
import superjson from 'superjson';
import { apiErrorOf } from './api-error';

export type { RouterInputs, RouterOutputs };

/**
 * The typed client of the platform's own router, on the page's origin: the session cookie (HttpOnly,
 * set by sign-in) goes with every call, and no credential is ever kept by the page. Subscriptions use
 * the browser's EventSource, which sends the cookie too and resumes after the last event it saw.
 */
export const { TRPCProvider, useTRPC, useTRPCClient } = createTRPCContext<AppRouter>();

export function createApiClient(base = '/trpc') {
  return createTRPCClient<AppRouter>({
    links: [
      splitLink({
        condition: (op) => op.type === 'subscription',
        true: httpSubscriptionLink({ url: base, transformer: superjson }),
        false: httpBatchLink({
          url: base,
          transformer: superjson,
          maxURLLength: 4000,
          fetch: (url, init) => fetch(url, { ...init, credentials: 'same-origin' }),
        }),
      }),
    ],
  });
}

export function createQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: {
        staleTime: 5_000,
        // A 4xx will answer the same the second time; a dropped connection may not.
        retry: (count, error) => count < 2 && (apiErrorOf(error).status === 0 || apiErrorOf(error).status >= 500),
        refetchOnWindowFocus: true,
      },
      mutations: { retry: false },
    },
  });
}
