import { z } from 'zod';
import { line, queryInt } from '../platform/input-schemas.js';
import { AUDIT_ACTOR_KINDS, AUDIT_DOORS } from './audit.records.js';

export const auditEntryView = z
  .object({
    id: z.string(),
    at: z.string(),
    actor: z.object({ kind: z.enum(AUDIT_ACTOR_KINDS), id: z.string().nullable(), userId: z.string().nullable() }),
    /** The procedure (`services.update`), the CLI command or the platform's job. */
    operation: z.string(),
    door: z.enum(AUDIT_DOORS),
    targetIds: z.array(z.string()),
    projectId: z.string().nullable(),
    clientAddress: z.string().nullable(),
    /** `success`, or the error code the caller got. */
    outcome: z.string(),
  })
  .meta({ id: 'AuditEntry' });
export type AuditEntryView = z.infer<typeof auditEntryView>;

export const auditQuery = z.strictObject({
  projectId: line(64).min(1).optional(),
  /** A key's, token's or user's id, or a job's name. */
  actor: line(64).min(1).optional(),
  operation: line(128).min(1).optional(),
  /** ISO time, inclusive. */
  from: line(64).optional(),
  /** ISO time, exclusive. */
  to: line(64).optional(),
  /** The `nextCursor` of the previous page. */
  cursor: line(32).optional(),
  limit: queryInt(1, 500).optional(),
});
export type AuditQuery = z.infer<typeof auditQuery>;
