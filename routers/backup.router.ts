import { z } from 'zod';
import {
  BACKUP_STORAGES,
  backupListView,
  backupLogLineView,
  backupSettingsInput,
  backupSettingsView,
  backupView,
  restoreResultView,
} from '../src/index.js';
import { idParam, okTrue } from './schemas.js';
import { readProcedure, router, writeProcedure } from './trpc.js';

const tags = ['Backups'];
const base = '/api/services/{serviceId}/database/backups';
const backupParams = { serviceId: idParam, backupId: idParam };

export const backupRouter = router({
  list: readProcedure
    .meta({
      scope: 'db:manage',
      openapi: {
        method: 'GET',
        path: base,
        tags,
        summary: 'Backups of a database service, its backup settings and whether the object store answers',
      },
    })
    .input(z.strictObject({ serviceId: idParam }))
    .output(backupListView)
    .query(({ ctx, input, signal }) => ctx.services.backups.list(ctx.actor, input.serviceId, signal)),

  create: writeProcedure
    .meta({
      scope: 'db:manage',
      openapi: {
        method: 'POST',
        path: base,
        tags,
        summary: 'Start a backup; it answers at once with status `running` and runs in the background',
        description:
          'PostgreSQL and TimescaleDB: `pg_dump -Fc` (format `custom`); MySQL: `mysqldump --single-transaction` (format `sql`). Other engines answer 422 `not_supported`. `object` and `disk+object` need an object store (PUT /api/settings).',
      },
      created: true,
    })
    .input(z.strictObject({ serviceId: idParam, storage: z.enum(BACKUP_STORAGES) }))
    .output(z.object({ backup: backupView }))
    .mutation(async ({ ctx, input }) => ({ backup: await ctx.services.backups.create(ctx.actor, input.serviceId, input.storage) })),

  restore: writeProcedure
    .meta({
      scope: 'db:manage',
      upstream: 'the object store',
      openapi: {
        method: 'POST',
        path: `${base}/{backupId}/restore`,
        tags,
        summary: 'Restore a backup into its database, after checking its checksum (409 `checksum_mismatch` touches nothing)',
      },
    })
    .input(z.strictObject(backupParams))
    .output(restoreResultView)
    .mutation(({ ctx, input, signal }) => ctx.services.backupRestore.restore(ctx.actor, input.serviceId, input.backupId, signal)),

  drill: writeProcedure
    .meta({
      scope: 'db:manage',
      openapi: {
        method: 'POST',
        path: `${base}/{backupId}/drill`,
        tags,
        summary: 'Run a restore drill of this backup now: restored into a scratch container and checked; the report is on the backup',
        description:
          "Answers at once with the backup, its `drill` `queued`; drills run one at a time. The drill checks the checksum, restores into a scratch container of the engine's image on a private network (no domain, no host port), compares the engine's own counts with those recorded at backup time, and removes the container. `drill.status` ends `passed`, `failed` (with the reason) or `skipped` (the disk would pass 90%). 409 while a drill of it is queued or running, or when the backup did not succeed.",
      },
    })
    .input(z.strictObject(backupParams))
    .output(z.object({ backup: backupView }))
    .mutation(async ({ ctx, input }) => ({
      backup: await ctx.services.drills.request(ctx.actor, input.serviceId, input.backupId),
    })),

  delete: writeProcedure
    .meta({
      scope: 'db:manage',
      upstream: 'the object store',
      openapi: { method: 'DELETE', path: `${base}/{backupId}`, tags, summary: 'Delete a backup from every place it is stored' },
    })
    .input(z.strictObject(backupParams))
    .output(okTrue)
    .mutation(async ({ ctx, input, signal }) => {
      await ctx.services.backups.delete(ctx.actor, input.serviceId, input.backupId, signal);
      return { ok: true as const };
    }),

  logs: readProcedure
    .meta({
      scope: 'db:manage',
      answerCache: true,
      openapi: {
        method: 'GET',
        path: `${base}/{backupId}/logs`,
        tags,
        summary: "A backup's log: each step of the backup and of its restores, secrets masked",
      },
    })
    .input(z.strictObject(backupParams))
    .output(z.object({ logs: z.array(backupLogLineView) }))
    .query(async ({ ctx, input }) => ({ logs: await ctx.services.backups.logs(ctx.actor, input.serviceId, input.backupId) })),

  updateSettings: writeProcedure
    .meta({
      scope: 'db:manage',
      openapi: {
        method: 'PUT',
        path: `${base}/settings`,
        tags,
        summary: 'Change the backup settings: storage, automatic daily/weekly/monthly backups and how many of each are kept',
      },
    })
    .input(backupSettingsInput.extend({ serviceId: idParam }))
    .output(z.object({ settings: backupSettingsView }))
    .mutation(async ({ ctx, input }) => {
      const { serviceId, ...settings } = input;
      return { settings: await ctx.services.backupSettings.update(ctx.actor, serviceId, settings) };
    }),

  /** The bytes are sent by adapters/http/download-bridge.ts; this checks the key and names the file. */
  download: readProcedure
    .meta({
      scope: 'db:manage',
      upstream: 'the object store',
      download: {
        tags: ['Backups'],
        path: `${base}/{backupId}/download`,
        summary: "Download a backup's file",
        description: 'The stored bytes (`application/octet-stream`), with Content-Length and a Content-Disposition file name.',
      },
    })
    .input(z.strictObject(backupParams))
    .query(async ({ ctx, input }) => {
      const download = await ctx.services.backups.download(ctx.actor, input.serviceId, input.backupId);
      // `open` is for the bridge in this process: not enumerable, so a /trpc caller gets the name and size only.
      return Object.defineProperty({ fileName: download.fileName, sizeBytes: download.sizeBytes }, 'open', {
        value: download.open,
        enumerable: false,
      }) as { fileName: string; sizeBytes: number };
    }),
});
