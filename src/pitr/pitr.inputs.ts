import { z } from 'zod';
import { idParam, strictInt } from '../platform/input-schemas.js';
import { MAX_RETENTION_DAYS } from './pitr.records.js';

/*
 * The inputs of point-in-time recovery (issue 35): a field out of range or of the wrong shape is a 400
 * naming it; a well-formed `at` outside the recoverable window is the use case's 422, which gives the window.
 */

/** `PUT /api/services/:id/database/pitr`: `storage` is `disk`, `object` (the install's object store) or a storage instance's id. */
export const pitrSettingsInput = z.strictObject({
  enabled: z.boolean(),
  storage: z
    .union([z.enum(['disk', 'object']), idParam])
    .optional()
    .meta({ description: '`disk`, `object` (the object store of the backup settings) or a storage instance id (default `disk`)' }),
  retentionDays: strictInt(1, MAX_RETENTION_DAYS)
    .optional()
    .meta({ description: `Days of WAL and base backups kept, 1 to ${MAX_RETENTION_DAYS} (default 7)` }),
});
export type PitrSettingsInput = z.output<typeof pitrSettingsInput>;

/** An ISO 8601 time with its offset (`2026-11-28T12:00:00Z`, `...+01:00`): a bare date or a local time is ambiguous. */
const isoTime = z.iso.datetime({ offset: true, message: 'must be an ISO 8601 time with a zone, e.g. 2026-11-28T12:00:00Z' });

/** `POST /api/services/:id/database/pitr/restore`: into a new service unless `replace` (with `confirm` naming the service). */
export const pitrRestoreFields = z.strictObject({
  at: isoTime.meta({ description: 'The second to restore to (ISO 8601 with a zone); inside the window GET .../pitr shows' }),
  replace: z.boolean().optional().meta({ description: 'Overwrite the original instead of restoring beside it (needs `confirm`)' }),
  confirm: z.string().max(200).optional().meta({ description: "With `replace`: the service's name, as typed confirmation" }),
});

/** `replace: true` without `confirm` is a 400 on `confirm` (the use case checks that it names the service). */
export function confirmRequired(input: { replace?: boolean | undefined; confirm?: string | undefined }, ctx: z.RefinementCtx): void {
  if (input.replace && input.confirm === undefined)
    ctx.addIssue({ code: 'custom', path: ['confirm'], message: "replace: true needs confirm with the service's name" });
}

export const pitrRestoreInput = pitrRestoreFields.superRefine(confirmRequired);
export type PitrRestoreInput = z.output<typeof pitrRestoreInput>;
