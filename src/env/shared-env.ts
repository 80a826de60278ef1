/**
 * Shared project variables: one document per project in the settings table (a PUT replaces the
 * whole map, so one row written at once is the natural unit). Values are encrypted like service env.
 */
export interface SharedEnvEntry {
  key: string;
  valueEncrypted: string;
  secret: boolean;
  updatedAt: string;
}

/** The reference namespace of shared variables: `${shared.KEY}`. */
export const SHARED_SLUG = 'shared';

/** At most this many shared variables per project. */
export const MAX_SHARED_VARIABLES = 500;

export function sharedEnvKey(projectId: string): string {
  return `project-env:${projectId}`;
}

export function parseSharedEnv(raw: string | null): SharedEnvEntry[] {
  return raw ? (JSON.parse(raw) as SharedEnvEntry[]) : [];
}
