import { useQueryClient } from '@tanstack/react-query';
import { useSubscription } from '@trpc/tanstack-react-query';
import { createContext, type ReactNode, useContext, useState } from 'react';
import { eventOf, pollEvery, staleAfter } from '../lib/live-events';
import { useTRPC } from '../lib/trpc';

const LiveContext = createContext(false);

/**
 * The platform's event stream for the signed-in person (`events.stream`, resumed after the last event
 * by the subscription link): each event refetches the answers it makes stale, on whatever screen is
 * open. While it is connected, screens poll only as a safety net (`useLivePoll`).
 */
export function LiveUpdates({ children }: { children: ReactNode }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [connected, setConnected] = useState(false);
  const subscription = useSubscription(
    trpc.events.stream.subscriptionOptions(
      { lastEventId: null },
      {
        onStarted: () => setConnected(true),
        onData: (item) => {
          const event = eventOf(item);
          if (!event) return;
          for (const path of staleAfter(event.type)) void queryClient.invalidateQueries({ queryKey: [path] });
        },
        onError: () => setConnected(false),
      },
    ),
  );
  const live = connected && subscription.status === 'pending';
  return <LiveContext.Provider value={live}>{children}</LiveContext.Provider>;
}

/** A screen's refetch interval: `ms` while the stream is down, a slow safety net while it is up. */
export function useLivePoll(ms: number): number {
  return pollEvery(useContext(LiveContext), ms);
}

/** Whether the screen follows the platform live, said in words (not a colour only). */
export function LiveIndicator() {
  const live = useContext(LiveContext);
  return (
    <span className="live" data-live={live ? 'on' : 'off'} role="status">
      <span className="live-dot" aria-hidden="true" /> {live ? 'Live updates on' : 'Live updates off (reading every few seconds)'}
    </span>
  );
}
