import { z } from 'zod';
import { backupConfigurationInput, backupConfigurationView, backupRecordsQuery, backupView } from '../src/index.js';
import { idParam, okTrue } from './schemas.js';
import { readProcedure, router, writeProcedure } from './trpc.js';

/**
 * The general API's backup configurations: a database, a cron schedule (UTC), a destination and a
 * retention, over BackupScheduleService; the backups they make are the detailed API's (docs/backups.md).
 * Every path needs `db:manage`, as the detailed backup paths do: backups hold the database's data.
 */
const tags = ['Backups'];
const base = '/api/backups';
const configurationParam = { configurationId: idParam };
const configurationAnswer = z.object({ configuration: backupConfigurationView });

export const backupConfigurationRouter = router({
  list: readProcedure
    .meta({
      scope: 'db:manage',
      answerCache: true,
      openapi: {
        method: 'GET',
        path: base,
        tags,
        summary: 'Backup configurations of the databases visible to the key (the daily/weekly/monthly switches among them)',
      },
    })
    .input(z.strictObject({ serviceId: idParam.optional().meta({ description: 'Only this database service' }) }).optional())
    .output(z.object({ configurations: z.array(backupConfigurationView) }))
    .query(async ({ ctx, input }) => ({ configurations: await ctx.services.backupSchedules.list(ctx.actor, input?.serviceId) })),

  create: writeProcedure
    .meta({
      scope: 'db:manage',
      created: true,
      openapi: {
        method: 'POST',
        path: base,
        tags,
        summary: 'Create a backup configuration: a database backed up on a cron schedule (UTC), with a retention',
        description:
          'The schedule fires at most every 5 minutes (a 400 on `schedule` otherwise, saying why); at most 10 configurations per database. Without a retention, 7 backups are kept.',
      },
    })
    .input(backupConfigurationInput)
    .output(configurationAnswer)
    .mutation(async ({ ctx, input }) => ({ configuration: await ctx.services.backupSchedules.create(ctx.actor, input) })),

  get: readProcedure
    .meta({
      scope: 'db:manage',
      answerCache: true,
      openapi: { method: 'GET', path: `${base}/{configurationId}`, tags, summary: 'A backup configuration' },
    })
    .input(z.strictObject(configurationParam))
    .output(configurationAnswer)
    .query(async ({ ctx, input }) => ({ configuration: await ctx.services.backupSchedules.get(ctx.actor, input.configurationId) })),

  delete: writeProcedure
    .meta({
      scope: 'db:manage',
      openapi: {
        method: 'DELETE',
        path: `${base}/{configurationId}`,
        tags,
        summary: 'Delete a backup configuration; the backups it made stay',
        description: 'The daily/weekly/monthly ones (`managed`) answer 409: turn them off in the backup settings.',
      },
    })
    .input(z.strictObject(configurationParam))
    .output(okTrue)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.backupSchedules.delete(ctx.actor, input.configurationId);
      return { ok: true as const };
    }),

  trigger: writeProcedure
    .meta({
      scope: 'db:manage',
      created: true,
      openapi: {
        method: 'POST',
        path: `${base}/{configurationId}/trigger`,
        tags,
        summary: 'Back up now with this configuration: answers at once with the backup, status `running`',
      },
    })
    .input(z.strictObject(configurationParam))
    .output(z.object({ backup: backupView }))
    .mutation(async ({ ctx, input }) => ({ backup: await ctx.services.backupSchedules.trigger(ctx.actor, input.configurationId) })),

  records: readProcedure
    .meta({
      scope: 'db:manage',
      answerCache: true,
      openapi: {
        method: 'GET',
        path: `${base}/{configurationId}/records`,
        tags,
        summary: 'The backups this configuration made (fired or triggered), newest first',
      },
    })
    .input(z.strictObject({ ...configurationParam, ...backupRecordsQuery }))
    .output(z.object({ records: z.array(backupView) }))
    .query(async ({ ctx, input }) => ({
      records: await ctx.services.backupSchedules.records(ctx.actor, input.configurationId, input.limit),
    })),
});
