import { tracked } from '@trpc/server';
import { z } from 'zod';
import { readProcedure, router } from './trpc.js';

/** tRPC sends `lastEventId` back on reconnect; events' ids are their seq. */
const lastEventId = z.string().regex(/^\d+$/).nullish();

export const eventRouter = router({
  stream: readProcedure
    .meta({
      scope: 'project:read',
      sse: {
        path: '/api/events/stream',
        summary: 'Stream the platform’s events live',
        description:
          'Events: `event` (one Event, with `id:` its seq), `ping` `{t}` every 15 s. Only what the caller may see: its projects’ events; the install’s (disk, servers) for callers of all projects; keys, tokens and sign-ins for the install’s administrators. Resume with Last-Event-ID: every event after it that is still retained (EVENT_RETENTION_DAYS) comes first.',
      },
    })
    .input(z.strictObject({ lastEventId }))
    .subscription(async ({ ctx, input, signal }) => {
      const events = await ctx.services.eventStream.stream(ctx.actor, {
        lastEventId: input.lastEventId ? Number(input.lastEventId) : undefined,
        signal: signal ?? new AbortController().signal,
      });
      return (async function* () {
        for await (const item of events) {
          if (item.type === 'event') yield tracked(String(item.seq), { type: 'event' as const, event: item.event });
          else yield item;
        }
      })();
    }),
});
