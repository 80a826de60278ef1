import { z } from 'zod';
import {
  createServerInput,
  DomainError,
  joinBundleView,
  joinServerInput,
  registryInput,
  registryView,
  serverCreatedView,
  serverOneView,
  serversView,
  updateServerInput,
} from '../src/index.js';
import { idParam } from './schemas.js';
import { publicProcedure, readProcedure, router, writeProcedure } from './trpc.js';

const tags = ['Servers'];
const noInput = z.strictObject({}).optional();

/** Servers and the cluster (docs/cluster.md): the install's admins only, except a joining server's own exchange. */
export const serverRouter = router({
  list: readProcedure
    .meta({
      scope: 'admin',
      answerCache: true,
      openapi: {
        method: 'GET',
        path: '/api/servers',
        tags,
        summary: 'The servers: the host running the platform first, then those added; state, availability, resources, tasks',
        description:
          'For the install\u2019s admins (all-project keys, owners and admins, admin tokens); project-scoped keys and members get 403.',
      },
    })
    .input(noInput)
    .output(serversView)
    .query(async ({ ctx }) => ({ servers: await ctx.services.servers.list(ctx.actor) })),

  get: readProcedure
    .meta({
      scope: 'admin',
      answerCache: true,
      openapi: { method: 'GET', path: '/api/servers/{id}', tags, summary: 'One server, with the services and tasks on it' },
    })
    .input(z.strictObject({ id: idParam }))
    .output(serverOneView)
    .query(async ({ ctx, input }) => ({ server: await ctx.services.servers.get(ctx.actor, input.id) })),

  create: writeProcedure
    .meta({
      scope: 'admin',
      created: true,
      openapi: {
        method: 'POST',
        path: '/api/servers',
        tags,
        summary: 'Add a server: a one-line join command with a single-use token (shown once)',
        description:
          'Run `join.command` as root on the new machine: on Debian it installs the Docker engine where missing, then joins. The token expires after JOIN_TOKEN_TTL_SECONDS (15 minutes by default). The cluster forms when the second server joins.',
      },
    })
    .input(createServerInput)
    .output(serverCreatedView)
    .mutation(({ ctx, input }) => ctx.services.servers.add(ctx.actor, input)),

  update: writeProcedure
    .meta({
      scope: 'admin',
      openapi: {
        method: 'PATCH',
        path: '/api/servers/{id}',
        tags,
        summary: 'Change a server\u2019s availability (`drain` moves its tasks to the others) or its labels',
      },
    })
    .input(updateServerInput)
    .output(serverOneView)
    .mutation(async ({ ctx, input }) => ({ server: await ctx.services.servers.update(ctx.actor, input) })),

  delete: writeProcedure
    .meta({
      scope: 'admin',
      openapi: {
        method: 'DELETE',
        path: '/api/servers/{id}',
        tags,
        summary: 'Remove a drained server',
        description:
          '409 while it is not drained, still runs tasks, holds a database\u2019s volume (`details.databases` names them), or is the last manager.',
      },
    })
    .input(z.strictObject({ id: idParam }))
    .output(z.object({ ok: z.literal(true) }))
    .mutation(async ({ ctx, input }) => {
      await ctx.services.servers.remove(ctx.actor, input.id);
      return { ok: true as const };
    }),

  join: publicProcedure
    .meta({
      scope: 'public',
      openapi: {
        method: 'POST',
        path: '/api/servers/join',
        tags,
        summary:
          'A joining server\u2019s exchange (the join script calls it): its single-use token for the CA, its engine\u2019s certificate and the swarm token',
        description: '401 `invalid_credentials` for a wrong, used or expired token (failures are counted per address, as sign-ins are).',
        protect: false,
      },
    })
    .input(joinServerInput)
    .output(joinBundleView)
    .mutation(async ({ ctx, input }) => {
      try {
        return await ctx.services.serverJoins.exchange(input);
      } catch (error) {
        if (error instanceof DomainError && error.code === 'invalid_credentials') ctx.limiter.recordAuthFailure(ctx.ip);
        throw error;
      }
    }),

  joinScript: publicProcedure
    .meta({
      scope: 'public',
      download: {
        tags,
        path: '/api/servers/join.sh',
        summary: 'The join script the join command fetches (bash)',
        description:
          'Public: it holds no secret (the token is an argument of the command), and the command checks its SHA-256 before running it. scripts/cluster/join-node.sh with the engine provisioning inside.',
        contentType: 'text/x-shellscript',
      },
    })
    .input(z.strictObject({}).optional())
    .output(z.object({ filename: z.string(), body: z.string() }))
    .query(async ({ ctx }) => ({ filename: 'slipway-join.sh', body: await ctx.services.serverJoins.script() })),

  registry: readProcedure
    .meta({
      scope: 'admin',
      openapi: {
        method: 'GET',
        path: '/api/registry',
        tags,
        summary: 'The cluster\u2019s image registry: the platform\u2019s own or an external one, and whether it answers',
      },
    })
    .input(noInput)
    .output(z.object({ registry: registryView }))
    .query(async ({ ctx }) => ({ registry: await ctx.services.registry.view(ctx.actor) })),

  setRegistry: writeProcedure
    .meta({
      scope: 'admin',
      upstream: 'the external registry',
      openapi: {
        method: 'PUT',
        path: '/api/registry',
        tags,
        summary: 'Use the platform\u2019s registry, or an external one (its password is write-only, stored encrypted)',
        description: 'An external registry is checked with its credentials first: 502 when it does not accept them.',
      },
    })
    .input(registryInput)
    .output(z.object({ registry: registryView }))
    .mutation(async ({ ctx, input }) => ({ registry: await ctx.services.registry.configure(ctx.actor, input) })),
});
