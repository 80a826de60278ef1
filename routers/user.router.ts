import { z } from 'zod';
import { personalTokenInput, personalTokenView, roleInput, userView } from '../src/index.js';
import { idParam, okTrue } from './schemas.js';
import { readProcedure, router, writeProcedure } from './trpc.js';

const noInput = z.strictObject({}).optional();

/** The signed-in user's own account and personal tokens. */
export const userRouter = router({
  me: readProcedure
    .meta({
      scope: 'session',
      openapi: { method: 'GET', path: '/api/user', tags: ['Account'], summary: 'The signed-in user' },
    })
    .input(noInput)
    .output(z.object({ user: userView }))
    .query(async ({ ctx }) => ({ user: await ctx.services.accounts.me(ctx.actor) })),

  createToken: writeProcedure
    .meta({
      scope: 'session',
      created: true,
      openapi: {
        method: 'POST',
        path: '/api/user/tokens',
        tags: ['Account'],
        summary: 'Create a personal token (`slw_pat_...`) with scopes; the token is shown once, in this response',
      },
    })
    .input(personalTokenInput)
    .output(z.object({ token: z.string(), personalToken: personalTokenView }))
    .mutation(async ({ ctx, input }) => ctx.services.personalTokens.create(ctx.actor, input)),

  listTokens: readProcedure
    .meta({
      scope: 'session',
      answerCache: true,
      openapi: {
        method: 'GET',
        path: '/api/user/tokens',
        tags: ['Account'],
        summary: 'Personal tokens of the signed-in user (never the tokens)',
      },
    })
    .input(noInput)
    .output(z.object({ tokens: z.array(personalTokenView) }))
    .query(async ({ ctx }) => ({ tokens: await ctx.services.personalTokens.list(ctx.actor) })),

  deleteToken: writeProcedure
    .meta({
      scope: 'session',
      openapi: { method: 'DELETE', path: '/api/user/tokens/{id}', tags: ['Account'], summary: 'Revoke a personal token, at once' },
    })
    .input(z.strictObject({ id: idParam }))
    .output(okTrue)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.personalTokens.delete(ctx.actor, input.id);
      return { ok: true as const };
    }),
});

/** The installation's users, managed by the owner (admins may list them). */
export const usersRouter = router({
  list: writeProcedure
    .meta({
      scope: 'admin',
      answerCache: true,
      openapi: { method: 'GET', path: '/api/users', tags: ['Users'], summary: 'Every account of the installation (owner and admins)' },
    })
    .input(noInput)
    .output(z.object({ users: z.array(userView) }))
    .query(async ({ ctx }) => ({ users: await ctx.services.accounts.listUsers(ctx.actor) })),

  setRole: writeProcedure
    .meta({
      scope: 'admin',
      openapi: { method: 'PATCH', path: '/api/users/{userId}', tags: ['Users'], summary: 'Make a user an admin or a member (owner only)' },
    })
    .input(z.strictObject({ userId: idParam, role: roleInput }))
    .output(z.object({ user: userView }))
    .mutation(async ({ ctx, input }) => ({ user: await ctx.services.accounts.setRole(ctx.actor, input.userId, input.role) })),

  remove: writeProcedure
    .meta({
      scope: 'admin',
      openapi: {
        method: 'DELETE',
        path: '/api/users/{userId}',
        tags: ['Users'],
        summary: 'Remove a user with their sessions and tokens (owner only; never the owner)',
      },
    })
    .input(z.strictObject({ userId: idParam }))
    .output(okTrue)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.accounts.removeUser(ctx.actor, input.userId);
      return { ok: true as const };
    }),
});
