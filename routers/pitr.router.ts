import { z } from 'zod';
import { confirmRequired, pitrRestoreFields, pitrRestoreLogLineView, pitrRestoreView, pitrSettingsInput, pitrView } from '../src/index.js';
import { idParam } from './schemas.js';
import { readProcedure, router, writeProcedure } from './trpc.js';

const tags = ['Point-in-time recovery'];
const path = '/api/services/{serviceId}/database/pitr';

/** Point-in-time recovery of a PostgreSQL or TimescaleDB service (docs/backups.md): validated here, decided by PitrService. */
export const pitrRouter = router({
  get: readProcedure
    .meta({
      scope: 'db:manage',
      openapi: {
        method: 'GET',
        path,
        tags,
        summary:
          "Point-in-time recovery of a database: its settings, the window a restore can reach, the archive's lag and the last base backup",
        description:
          'PostgreSQL and TimescaleDB; other engines answer 422 `not_supported`. `window` is null until a base backup and its WAL are archived.',
      },
    })
    .input(z.strictObject({ serviceId: idParam }))
    .output(z.object({ pitr: pitrView }))
    .query(async ({ ctx, input }) => ({ pitr: await ctx.services.pitr.get(ctx.actor, input.serviceId) })),

  put: writeProcedure
    .meta({
      scope: 'db:manage',
      openapi: {
        method: 'PUT',
        path,
        tags,
        summary: 'Turn point-in-time recovery on or off, and say where its WAL and base backups go and for how long',
        description:
          '`storage`: `disk`, `object` (the object store of the backup settings, which must be set) or a storage instance id; `retentionDays` 1 to 3650 (400 naming the field otherwise).',
      },
    })
    .input(pitrSettingsInput.extend({ serviceId: idParam }))
    .output(z.object({ pitr: pitrView }))
    .mutation(async ({ ctx, input: { serviceId, ...settings } }) => ({
      pitr: await ctx.services.pitr.put(ctx.actor, serviceId, settings),
    })),

  restore: writeProcedure
    .meta({
      scope: 'db:manage',
      openapi: {
        method: 'POST',
        path: `${path}/restore`,
        tags,
        summary:
          'Restore the database as it was at a second of the window, into a new database service beside it (or in place with replace)',
        description:
          'Answers at once with the restore `queued`; `reachedAt` says the exact second reached once it succeeded. The new service (`targetServiceId`) is made at once and deployed once filled; `GET .../pitr` lists the restore (`restores`). `replace: true` restores in place and needs `confirm` set to the service’s name (400 naming `confirm` otherwise; 409 naming `replace` while another in-place restore of it is under way): the recovery fills a new volume while the database keeps running on its own, and only once that succeeded is the database deployed on the restored volume; a failure leaves it, or puts it back, on its own data, and the old volume is removed once it runs on the new one. An `at` that is not an ISO time is a 400; one in the future or before the window is a 422 `outside_window` whose details give the window.',
      },
      created: true,
    })
    .input(pitrRestoreFields.extend({ serviceId: idParam }).superRefine(confirmRequired))
    .output(z.object({ restore: pitrRestoreView }))
    .mutation(async ({ ctx, input: { serviceId, ...restore } }) => ({
      restore: await ctx.services.pitr.restore(ctx.actor, serviceId, restore),
    })),

  logs: readProcedure
    .meta({
      scope: 'db:manage',
      answerCache: true,
      openapi: {
        method: 'GET',
        path: `${path}/restores/{restoreId}/logs`,
        tags,
        summary:
          "A point-in-time restore's log: the checks, PostgreSQL's recovery, the second reached and an in-place swap, secrets masked",
        description: 'The restore is one of `GET .../pitr` `restores` (or the id `POST .../pitr/restore` answered); another id is a 404.',
      },
    })
    .input(z.strictObject({ serviceId: idParam, restoreId: idParam }))
    .output(z.object({ logs: z.array(pitrRestoreLogLineView) }))
    .query(async ({ ctx, input }) => ({ logs: await ctx.services.pitr.logs(ctx.actor, input.serviceId, input.restoreId) })),
});
