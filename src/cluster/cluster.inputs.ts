import { z } from 'zod';
import { SERVER_AVAILABILITIES } from './server.records.js';

/** Server names: what the user calls a machine (`worker-1`, `db.eu-2`). */
const serverName = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'letters, digits, dots, dashes and underscores, starting with a letter or digit');

/**
 * Node labels, as placement constraints match them. `slipway.*` keys are the platform's own. At most 32;
 * keys as Docker writes them, values printable without spaces at the ends.
 */
export const serverLabels = z
  .record(
    z
      .string()
      .min(1)
      .max(64)
      .regex(/^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$/, 'lower-case letters, digits, dots, dashes and underscores')
      .refine((key) => !key.startsWith('slipway.'), 'keys starting with slipway. are the platform\u2019s own'),
    z
      .string()
      .max(255)
      .regex(/^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$|^$/, 'printable ASCII, no spaces at the ends'),
  )
  .refine((labels) => Object.keys(labels).length <= 32, 'at most 32 labels');

export const createServerInput = z.strictObject({ name: serverName, labels: serverLabels.optional() });
export const updateServerInput = z.strictObject({
  id: z.string().min(1).max(64),
  availability: z.enum(SERVER_AVAILABILITIES).optional(),
  labels: serverLabels.optional(),
});

/** The join script's exchange: the one-time token, the node's certificate request and what it is. */
export const joinServerInput = z.strictObject({
  token: z.string().min(1).max(128),
  csrBase64: z
    .string()
    .min(1)
    .max(16_384)
    .regex(/^[A-Za-z0-9+/=]+$/, 'base64'),
  address: z
    .string()
    .min(2)
    .max(45)
    .regex(/^[0-9a-fA-F.:]+$/, 'an IP address'),
  hostname: z
    .string()
    .min(1)
    .max(255)
    .regex(/^[A-Za-z0-9][A-Za-z0-9.-]*$/, 'a host name'),
  engineVersion: z
    .string()
    .max(64)
    .regex(/^[A-Za-z0-9.+~_-]*$/, 'a version')
    .optional(),
});

/** The cluster's registry: the platform's own, or an external one (its password write-only, sealed at rest). */
export const registryInput = z
  .strictObject({
    kind: z.enum(['platform', 'external']),
    address: z
      .string()
      .min(1)
      .max(255)
      .regex(/^[A-Za-z0-9.-]+(:\d{1,5})?$/, '`host` or `host:port`, as image references name a registry')
      .optional(),
    username: z.string().min(1).max(255).optional(),
    password: z.string().min(1).max(4096).optional(),
  })
  .superRefine((value, ctx) => {
    for (const field of ['address', 'username', 'password'] as const) {
      if (value.kind === 'external' && value[field] === undefined)
        ctx.addIssue({ code: 'custom', path: [field], message: 'required for an external registry' });
      if (value.kind === 'platform' && value[field] !== undefined)
        ctx.addIssue({ code: 'custom', path: [field], message: 'only for an external registry' });
    }
  });

export type CreateServerInput = z.infer<typeof createServerInput>;
export type UpdateServerInput = z.infer<typeof updateServerInput>;
export type JoinServerInput = z.infer<typeof joinServerInput>;
export type RegistryInput = z.infer<typeof registryInput>;
