/** Who did it: an API key, a signed-in user, a user's personal token, the platform itself, or nobody known. */
export const AUDIT_ACTOR_KINDS = ['key', 'user', 'token', 'system', 'anonymous'] as const;
export type AuditActorKind = (typeof AUDIT_ACTOR_KINDS)[number];

/** Through which door the operation came. */
export const AUDIT_DOORS = ['rest', 'trpc', 'mcp', 'cli', 'git-webhook', 'schedule', 'system'] as const;
export type AuditDoor = (typeof AUDIT_DOORS)[number];

/**
 * One write (or one refused call) as the audit log keeps it. Append-only: nothing changes or
 * deletes a record but the retention. No request body and no secret goes in: ids, names of
 * operations, the address and the outcome.
 */
export interface AuditRecord {
  /** Increasing: the cursor of the listing. */
  id: number;
  at: Date;
  actorKind: AuditActorKind;
  /** The key's, token's or user's id; the job's name for `system`; null for `anonymous`. */
  actorId: string | null;
  /** The user behind a session or token. */
  userId: string | null;
  /** The procedure (`services.update`), the CLI command (`cli.keys.create`) or the job (`backups.schedule`). */
  operation: string;
  door: AuditDoor;
  targetIds: string[];
  projectId: string | null;
  clientAddress: string | null;
  /** `success`, or the error code the caller got. */
  outcome: string;
}

export type NewAuditRecord = Omit<AuditRecord, 'id'>;
