import { z } from 'zod';
import {
  backupLogLineView,
  backupView,
  restoreResultView,
  volumeBackupInput,
  volumeBackupListView,
  volumeName,
  volumeView,
} from '../src/index.js';
import { idParam, okTrue } from './schemas.js';
import { readProcedure, router, writeProcedure } from './trpc.js';

const tags = ['Volumes'];
const base = '/api/services/{serviceId}/volumes/{name}/backups';
const volumeParams = { serviceId: idParam, name: volumeName };
const backupParams = { ...volumeParams, backupId: idParam };

/** Named volumes of a service and their backups: the database backups' surface, under `/volumes/{name}`. */
export const volumeRouter = router({
  list: readProcedure
    .meta({
      scope: 'project:read',
      answerCache: true,
      openapi: { method: 'GET', path: '/api/services/{serviceId}/volumes', tags, summary: "A service's named volumes" },
    })
    .input(z.strictObject({ serviceId: idParam }))
    .output(z.object({ volumes: z.array(volumeView) }))
    .query(async ({ ctx, input }) => ({ volumes: await ctx.services.volumeBackups.volumes(ctx.actor, input.serviceId) })),

  backups: readProcedure
    .meta({
      scope: 'project:read',
      answerCache: true,
      openapi: { method: 'GET', path: base, tags, summary: 'Backups of a named volume, newest first, each with its last drill' },
    })
    .input(z.strictObject(volumeParams))
    .output(volumeBackupListView)
    .query(({ ctx, input }) => ctx.services.volumeBackups.list(ctx.actor, input.serviceId, input.name)),

  createBackup: writeProcedure
    .meta({
      scope: 'project:write',
      openapi: {
        method: 'POST',
        path: base,
        tags,
        summary: 'Start a backup of the volume (a sha256-checksummed tar); it answers at once with status `running`',
        description:
          "`mode` `stopped` (default) stops the service for the snapshot and starts it again (the downtime is in the backup's log); `live` reads the volume while the service runs. `object` and `disk+object` need an object store (PUT /api/settings).",
      },
      created: true,
    })
    .input(volumeBackupInput.extend(volumeParams))
    .output(z.object({ backup: backupView }))
    .mutation(async ({ ctx, input }) => {
      const { serviceId, name, ...options } = input;
      return { backup: await ctx.services.volumeBackups.create(ctx.actor, serviceId, name, options) };
    }),

  restore: writeProcedure
    .meta({
      scope: 'project:write',
      upstream: 'the object store',
      openapi: {
        method: 'POST',
        path: `${base}/{backupId}/restore`,
        tags,
        summary:
          "Replace the volume's files with the backup's, after checking its checksum (409 `checksum_mismatch` touches nothing); the service is stopped meanwhile",
      },
    })
    .input(z.strictObject(backupParams))
    .output(restoreResultView)
    .mutation(({ ctx, input, signal }) =>
      ctx.services.volumeBackups.restore(ctx.actor, input.serviceId, input.name, input.backupId, signal),
    ),

  drill: writeProcedure
    .meta({
      scope: 'project:write',
      openapi: {
        method: 'POST',
        path: `${base}/{backupId}/drill`,
        tags,
        summary: 'Run a restore drill now: the tar restored into a scratch volume, its file count and total size checked',
      },
    })
    .input(z.strictObject(backupParams))
    .output(z.object({ backup: backupView }))
    .mutation(async ({ ctx, input }) => ({
      backup: await ctx.services.volumeBackups.drill(ctx.actor, input.serviceId, input.name, input.backupId),
    })),

  deleteBackup: writeProcedure
    .meta({
      scope: 'project:write',
      upstream: 'the object store',
      openapi: { method: 'DELETE', path: `${base}/{backupId}`, tags, summary: 'Delete a volume backup from every place it is stored' },
    })
    .input(z.strictObject(backupParams))
    .output(okTrue)
    .mutation(async ({ ctx, input, signal }) => {
      await ctx.services.volumeBackups.delete(ctx.actor, input.serviceId, input.name, input.backupId, signal);
      return { ok: true as const };
    }),

  logs: readProcedure
    .meta({
      scope: 'project:read',
      answerCache: true,
      openapi: {
        method: 'GET',
        path: `${base}/{backupId}/logs`,
        tags,
        summary: "A volume backup's log: the snapshot, its downtime, restores and drills",
      },
    })
    .input(z.strictObject(backupParams))
    .output(z.object({ logs: z.array(backupLogLineView) }))
    .query(async ({ ctx, input }) => ({
      logs: await ctx.services.volumeBackups.logs(ctx.actor, input.serviceId, input.name, input.backupId),
    })),

  /** The bytes are sent by adapters/http/download-bridge.ts; this checks the key and names the file. */
  download: readProcedure
    .meta({
      // As a database backup's download: a read key of the project may take it (docs/decisions.md).
      scope: 'project:read',
      upstream: 'the object store',
      download: {
        tags,
        path: `${base}/{backupId}/download`,
        summary: "Download a volume backup's tar",
        description: 'The stored tar (`application/octet-stream`), with Content-Length and a Content-Disposition file name.',
      },
    })
    .input(z.strictObject(backupParams))
    .query(async ({ ctx, input }) => {
      const download = await ctx.services.volumeBackups.download(ctx.actor, input.serviceId, input.name, input.backupId);
      return Object.defineProperty({ fileName: download.fileName, sizeBytes: download.sizeBytes }, 'open', {
        value: download.open,
        enumerable: false,
      }) as { fileName: string; sizeBytes: number };
    }),
});
