import { z } from 'zod';
import { line } from './schemas.js';
import { router, writeProcedure } from './trpc.js';

const tags = ['Terminals'];

export const terminalRouter = router({
  createTicket: writeProcedure
    .meta({
      scope: 'deploy:write',
      created: true,
      openapi: {
        method: 'POST',
        path: '/api/ws/tickets',
        tags,
        summary: 'A single-use ticket to open one terminal WebSocket (30 s)',
        description:
          'For browsers, which cannot set headers on a WebSocket: open `target` (`/api/ws/services/{serviceId}/terminal` or `/api/ws/terminal/{container}`) with `?ticket=` within 30 s. The target is checked now as the socket will check it.',
      },
    })
    .input(z.strictObject({ target: line(300) }))
    .output(z.object({ ticket: z.string(), expiresAt: z.string() }))
    .mutation(({ ctx, input }) => ctx.services.terminals.issueTicket(ctx.actor, input.target)),
});
