import { z } from 'zod';
import {
  assertPollInterval,
  DEFAULT_PREVIEW_SETTINGS,
  MAX_OPEN_PREVIEWS,
  MAX_POLL_INTERVAL_SECONDS,
  MAX_PREVIEW_VARIABLES,
  MIN_POLL_INTERVAL_SECONDS,
  PREVIEW_DATABASE_MODES,
  type PreviewSettings,
} from '../domain/deploy-triggers.js';
import { ValidationError } from '../domain/errors.js';
import type { ServiceRecord } from '../domain/types.js';
import { assertEnvKey } from '../domain/validation.js';
import { line, strictBoolean, strictInt, text } from '../platform/input-schemas.js';
import type { SecretBox } from '../platform/secret-box.js';
import type { ServicePollRecord } from './git-hook.records.js';
import { globToRegExp, MAX_WATCH_PATH_LENGTH, MAX_WATCH_PATHS } from './matching.js';

/**
 * The service fields of push to deploy, polling and previews: their input schemas (spread into the
 * service create and update inputs), how a create or a PATCH applies them, and how a service shows them.
 */

export const previewsInput = z.strictObject({
  enabled: strictBoolean().optional(),
  maxOpen: strictInt(1, MAX_OPEN_PREVIEWS).optional(),
  fromForks: strictBoolean().optional(),
  ttlHours: strictInt(1, 24 * 90)
    .nullable()
    .optional(),
  databases: z.enum(PREVIEW_DATABASE_MODES).optional(),
  /** Replaces the preview variables; an entry without `value` keeps the stored one (a secret read back masked). */
  env: z
    .array(z.strictObject({ key: line(255), value: text(64 * 1024).optional(), secret: strictBoolean().optional() }))
    .max(MAX_PREVIEW_VARIABLES)
    .optional(),
});
export type PreviewsInput = z.output<typeof previewsInput>;

export const deployTriggerInputs = {
  autoDeploy: strictBoolean().optional().meta({
    description: 'A push to the branch (or a new digest of the image) deploys the service; default on for repositories and images',
  }),
  watchPaths: z.array(line(MAX_WATCH_PATH_LENGTH).min(1)).max(MAX_WATCH_PATHS).optional().meta({
    description:
      'Globs from the repository root (`apps/web/**`, `!**/*.md`): a push touching none of them does not deploy; empty: every push does',
  }),
  pollIntervalSeconds: strictInt(MIN_POLL_INTERVAL_SECONDS, MAX_POLL_INTERVAL_SECONDS)
    .nullable()
    .optional()
    .meta({
      description: `Poll the branch (or the image's digest) every so many seconds (at least ${MIN_POLL_INTERVAL_SECONDS}); null: off`,
    }),
  cancelInProgress: strictBoolean().optional().meta({ description: 'A newer push stops the running build instead of letting it finish' }),
  previews: previewsInput.nullable().optional().meta({ description: 'Pull-request previews; a PATCH merges the fields given' }),
};
export type DeployTriggerInput = { [K in keyof typeof deployTriggerInputs]?: z.output<(typeof deployTriggerInputs)[K]> };

type TriggerFields = Pick<ServiceRecord, 'autoDeploy' | 'watchPaths' | 'pollIntervalSeconds' | 'cancelInProgress' | 'previews'>;

/** A new service's fields: autoDeploy on for what is built or pulled, off (and meaningless) for databases and storage. */
export function deployTriggersOf(input: DeployTriggerInput, kind: ServiceRecord['source']['kind'], secrets: SecretBox): TriggerFields {
  const deploys = kind === 'repository' || kind === 'image';
  const fields: TriggerFields = { autoDeploy: deploys, watchPaths: [], pollIntervalSeconds: null, cancelInProgress: false, previews: null };
  return { ...fields, ...deployTriggersPatch({ ...fields, source: { kind } } as ServiceRecord, input, secrets) };
}

/** What a PATCH changes; a field left out stays as it is, `previews` merges field by field. */
export function deployTriggersPatch(service: ServiceRecord, input: DeployTriggerInput, secrets: SecretBox): Partial<TriggerFields> {
  const kind = service.source.kind;
  const patch: Partial<TriggerFields> = {};
  const onlyFor = (field: string, allowed: boolean, what: string) => {
    if (!allowed) throw new ValidationError(field, `${field} applies to ${what} only`);
  };
  if (input.autoDeploy !== undefined) {
    if (input.autoDeploy) onlyFor('autoDeploy', kind === 'repository' || kind === 'image', 'repository and image services');
    patch.autoDeploy = input.autoDeploy;
  }
  if (input.watchPaths !== undefined) {
    if (input.watchPaths.length > 0) onlyFor('watchPaths', kind === 'repository', 'repository services');
    patch.watchPaths = input.watchPaths.map((pattern, i) => checkedGlob(pattern, `watchPaths.${i}`));
  }
  if (input.pollIntervalSeconds !== undefined) {
    if (input.pollIntervalSeconds !== null)
      onlyFor('pollIntervalSeconds', kind === 'repository' || kind === 'image', 'repository and image services');
    patch.pollIntervalSeconds = assertPollInterval(input.pollIntervalSeconds);
  }
  if (input.cancelInProgress !== undefined) patch.cancelInProgress = input.cancelInProgress;
  if (input.previews !== undefined) {
    if (input.previews?.enabled) onlyFor('previews.enabled', kind === 'repository', 'repository services');
    patch.previews = input.previews === null ? null : mergePreviews(service.previews ?? DEFAULT_PREVIEW_SETTINGS, input.previews, secrets);
  }
  return patch;
}

function checkedGlob(pattern: string, field: string): string {
  const trimmed = pattern.trim();
  if (!trimmed || trimmed === '!') throw new ValidationError(field, 'A watch path is a glob such as apps/web/** or !**/*.md');
  try {
    globToRegExp(trimmed.replace(/^!/, ''));
  } catch {
    throw new ValidationError(field, `${JSON.stringify(pattern)} is not a glob the platform can read`);
  }
  return trimmed;
}

function mergePreviews(current: PreviewSettings, input: PreviewsInput, secrets: SecretBox): PreviewSettings {
  const next: PreviewSettings = { ...current };
  if (input.enabled !== undefined) next.enabled = input.enabled;
  if (input.maxOpen !== undefined) next.maxOpen = input.maxOpen;
  if (input.fromForks !== undefined) next.fromForks = input.fromForks;
  if (input.ttlHours !== undefined) next.ttlHours = input.ttlHours;
  if (input.databases !== undefined) next.databases = input.databases;
  if (input.env !== undefined) {
    const stored = new Map(current.variables.map((v) => [v.key, v]));
    const seen = new Set<string>();
    next.variables = input.env.map((entry, i) => {
      assertEnvKey(entry.key, `previews.env.${i}.key`);
      if (seen.has(entry.key)) throw new ValidationError(`previews.env.${i}.key`, `${entry.key} is given twice`);
      seen.add(entry.key);
      const existing = stored.get(entry.key);
      if (entry.value === undefined && !existing)
        throw new ValidationError(`previews.env.${i}.value`, `${entry.key} is new: it needs a value`);
      return {
        key: entry.key,
        valueEncrypted: entry.value === undefined ? existing!.valueEncrypted : secrets.encrypt(entry.value),
        secret: entry.secret ?? existing?.secret ?? false,
      };
    });
  }
  return next;
}

/** The fields as a service shows them: a secret preview variable's value is never shown. */
export function presentTriggerSettings(service: ServiceRecord, secrets: SecretBox) {
  const previews = service.previews ?? DEFAULT_PREVIEW_SETTINGS;
  return {
    autoDeploy: service.autoDeploy,
    watchPaths: service.watchPaths,
    pollIntervalSeconds: service.pollIntervalSeconds,
    cancelInProgress: service.cancelInProgress,
    previews: {
      enabled: previews.enabled,
      maxOpen: previews.maxOpen,
      fromForks: previews.fromForks,
      ttlHours: previews.ttlHours,
      databases: previews.databases,
      env: previews.variables.map((v) => ({ key: v.key, secret: v.secret, value: v.secret ? '' : secrets.decrypt(v.valueEncrypted) })),
    },
  };
}

export const triggerSettingsView = {
  autoDeploy: z.boolean(),
  watchPaths: z.array(z.string()),
  pollIntervalSeconds: z.number().int().nullable(),
  cancelInProgress: z.boolean(),
  previews: z.object({
    enabled: z.boolean(),
    maxOpen: z.number().int(),
    fromForks: z.boolean(),
    ttlHours: z.number().int().nullable(),
    databases: z.enum(PREVIEW_DATABASE_MODES),
    env: z.array(z.object({ key: z.string(), secret: z.boolean(), value: z.string().meta({ description: 'Empty for a secret' }) })),
  }),
};

export const pollView = z.object({
  lastCheckedAt: z.string().nullable(),
  nextCheckAt: z.string().nullable(),
  /** The commit (or digest) the last check saw. */
  lastSeen: z.string().nullable(),
  /** Failed checks in a row (each doubles the wait, up to an hour), and the last one's reason. */
  failures: z.number().int(),
  lastError: z.string().nullable(),
});

export function presentPoll(poll: ServicePollRecord | null): z.infer<typeof pollView> {
  return {
    lastCheckedAt: poll?.lastCheckedAt?.toISOString() ?? null,
    nextCheckAt: poll?.nextCheckAt.toISOString() ?? null,
    lastSeen: poll?.lastSeen ?? null,
    failures: poll?.failures ?? 0,
    lastError: poll?.lastError ?? null,
  };
}
