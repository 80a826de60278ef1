import { z } from 'zod';
import {
  channelInput,
  channelPatchInput,
  channelView,
  deliveriesQuery,
  notificationDeliveryView,
  ruleInput,
  ruleView,
  testResultView,
} from '../src/index.js';
import { idParam, okTrue } from './schemas.js';
import { router, writeProcedure } from './trpc.js';

const tags = ['Notifications'];
const noInput = z.strictObject({}).optional();

/**
 * Notification channels, the rules that route events to them, and their deliveries
 * (docs/events.md). The install's owners and admins only: every procedure takes a write key for all
 * projects, an owner's or admin's session, or a token with the admin scope.
 */
export const notificationRouter = router({
  channels: router({
    create: writeProcedure
      .meta({
        scope: 'admin',
        created: true,
        openapi: {
          method: 'POST',
          path: '/api/notifications/channels',
          tags,
          summary: 'Add a notification channel; a webhook channel answers its whsec_ signing secret, this once',
          description:
            'Refused with 400 naming the field: a malformed URL, a loopback, private or link-local target (unless NOTIFY_ALLOW_PRIVATE_TARGETS), a Telegram chat id that is not a number. A target that does not answer is saved: its test send says why.',
        },
      })
      .input(channelInput)
      .output(z.object({ channel: channelView, secret: z.string().nullable() }))
      .mutation(({ ctx, input }) => ctx.services.notifications.createChannel(ctx.actor, input)),

    list: writeProcedure
      .meta({
        scope: 'admin',
        answerCache: true,
        openapi: { method: 'GET', path: '/api/notifications/channels', tags, summary: 'Notification channels (secrets masked)' },
      })
      .input(noInput)
      .output(z.object({ channels: z.array(channelView) }))
      .query(async ({ ctx }) => ({ channels: await ctx.services.notifications.listChannels(ctx.actor) })),

    get: writeProcedure
      .meta({
        scope: 'admin',
        answerCache: true,
        openapi: { method: 'GET', path: '/api/notifications/channels/{id}', tags, summary: 'A notification channel' },
      })
      .input(z.strictObject({ id: idParam }))
      .output(z.object({ channel: channelView }))
      .query(async ({ ctx, input }) => ({ channel: await ctx.services.notifications.getChannel(ctx.actor, input.id) })),

    update: writeProcedure
      .meta({
        scope: 'admin',
        openapi: {
          method: 'PATCH',
          path: '/api/notifications/channels/{id}',
          tags,
          summary: 'Rename a channel or change its config (merged over the stored one: masked fields left out keep their values)',
        },
      })
      .input(channelPatchInput.extend({ id: idParam }))
      .output(z.object({ channel: channelView }))
      .mutation(async ({ ctx, input: { id, ...patch } }) => ({
        channel: await ctx.services.notifications.updateChannel(ctx.actor, id, patch),
      })),

    delete: writeProcedure
      .meta({
        scope: 'admin',
        openapi: { method: 'DELETE', path: '/api/notifications/channels/{id}', tags, summary: 'Remove a channel (and it from every rule)' },
      })
      .input(z.strictObject({ id: idParam }))
      .output(okTrue)
      .mutation(async ({ ctx, input }) => {
        await ctx.services.notifications.deleteChannel(ctx.actor, input.id);
        return { ok: true as const };
      }),

    test: writeProcedure
      .meta({
        scope: 'admin',
        openapi: {
          method: 'POST',
          path: '/api/notifications/channels/{id}/test',
          tags,
          summary: 'Send a test message now; the answer says whether it got through and, if not, why',
          description:
            '200 either way: `test.ok` false with `error` (the receiver’s answer, a timeout, a refused target). Recorded as a delivery.',
        },
      })
      .input(z.strictObject({ id: idParam }))
      .output(z.object({ test: testResultView }))
      .mutation(async ({ ctx, input }) => ({ test: await ctx.services.notifications.testChannel(ctx.actor, input.id) })),
  }),

  rules: router({
    create: writeProcedure
      .meta({
        scope: 'admin',
        created: true,
        openapi: {
          method: 'POST',
          path: '/api/notifications/rules',
          tags,
          summary: 'Route events to channels: a project’s events, or the whole install’s (projectId null)',
          description: '`events`: event types (docs/events.md), `<family>.*` or `*`; an unknown one is a 400 naming it.',
        },
      })
      .input(ruleInput)
      .output(z.object({ rule: ruleView }))
      .mutation(async ({ ctx, input }) => ({ rule: await ctx.services.notifications.createRule(ctx.actor, input) })),

    list: writeProcedure
      .meta({
        scope: 'admin',
        answerCache: true,
        openapi: { method: 'GET', path: '/api/notifications/rules', tags, summary: 'Notification rules' },
      })
      .input(noInput)
      .output(z.object({ rules: z.array(ruleView) }))
      .query(async ({ ctx }) => ({ rules: await ctx.services.notifications.listRules(ctx.actor) })),

    get: writeProcedure
      .meta({
        scope: 'admin',
        answerCache: true,
        openapi: { method: 'GET', path: '/api/notifications/rules/{id}', tags, summary: 'A notification rule' },
      })
      .input(z.strictObject({ id: idParam }))
      .output(z.object({ rule: ruleView }))
      .query(async ({ ctx, input }) => ({ rule: await ctx.services.notifications.getRule(ctx.actor, input.id) })),

    delete: writeProcedure
      .meta({ scope: 'admin', openapi: { method: 'DELETE', path: '/api/notifications/rules/{id}', tags, summary: 'Remove a rule' } })
      .input(z.strictObject({ id: idParam }))
      .output(okTrue)
      .mutation(async ({ ctx, input }) => {
        await ctx.services.notifications.deleteRule(ctx.actor, input.id);
        return { ok: true as const };
      }),
  }),

  deliveries: writeProcedure
    .meta({
      scope: 'admin',
      answerCache: true,
      openapi: {
        method: 'GET',
        path: '/api/notifications/deliveries',
        tags,
        summary: 'Deliveries, newest first, each with every attempt (status, latency, error)',
        description: '`?channelId=` for one channel; `nextCursor` pages on.',
      },
    })
    .input(deliveriesQuery.optional())
    .output(z.object({ deliveries: z.array(notificationDeliveryView), nextCursor: z.string().nullable() }))
    .query(({ ctx, input }) => ctx.services.notifications.listDeliveries(ctx.actor, input ?? {})),
});
