import { z } from 'zod';
import { line, queryInt } from '../platform/input-schemas.js';
import { CHANNEL_TYPES, type ChannelType } from './notification.records.js';

/*
 * The notifications API's inputs. A channel's `config` is an object whose fields depend on its
 * `type` (channelConfigs below): the use case checks it against its type's schema, so a 400 names
 * `config.<field>`.
 */

const httpUrl = z
  .string()
  .max(2048)
  .refine(
    (value) => {
      try {
        const url = new URL(value);
        return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '' && !/\s/.test(value);
      } catch {
        return false;
      }
    },
    { message: 'must be an http(s) URL' },
  );

const email = z
  .string()
  .max(320)
  .regex(/^[^\s@<>(),;:"]+@[^\s@<>(),;:"]+\.[^\s@<>(),;:"]+$/, { message: 'must be an email address' });

/** Each type's config; the URL-valued fields are checked against private ranges too (urlFields). */
export const channelConfigs = {
  email: z.strictObject({ to: z.array(email).min(1).max(20) }),
  slack: z.strictObject({ webhookUrl: httpUrl }),
  discord: z.strictObject({ webhookUrl: httpUrl }),
  teams: z.strictObject({ webhookUrl: httpUrl }),
  telegram: z.strictObject({
    botToken: z.string().regex(/^\d{1,20}:[\w-]{20,100}$/, { message: 'must be a bot token like 123456:ABC-DEF...' }),
    // Numeric ids only (groups and channels are negative): @usernames are refused.
    chatId: z.union([z.number().int(), z.string().regex(/^-?\d{1,20}$/)], { message: 'must be a number' }).transform(String),
  }),
  ntfy: z.strictObject({
    url: httpUrl,
    token: line(512).min(1).optional(),
    priority: z.number().int().min(1).max(5).optional(),
  }),
  gotify: z.strictObject({ url: httpUrl, token: line(512).min(1), priority: z.number().int().min(0).max(10).optional() }),
  webhook: z.strictObject({ url: httpUrl }),
} satisfies Record<ChannelType, z.ZodType>;

/** The fields of each type that are outbound URLs (checked against private ranges). */
export const urlFields: Record<ChannelType, readonly string[]> = {
  email: [],
  slack: ['webhookUrl'],
  discord: ['webhookUrl'],
  teams: ['webhookUrl'],
  telegram: [],
  ntfy: ['url'],
  gotify: ['url'],
  webhook: ['url'],
};

/** The fields answers mask: webhook URLs hold their token in the path, ntfy topics are their own password. */
export const secretFields: Record<ChannelType, readonly string[]> = {
  email: [],
  slack: ['webhookUrl'],
  discord: ['webhookUrl'],
  teams: ['webhookUrl'],
  telegram: ['botToken'],
  ntfy: ['url', 'token'],
  gotify: ['token'],
  webhook: ['url'],
};

const configObject = z
  .record(z.string().max(64), z.unknown())
  .describe(
    'Per type: email `{to: [address]}`; slack, discord, teams `{webhookUrl}`; telegram `{botToken, chatId}` (a number); ntfy `{url, token?, priority?}` (the topic URL); gotify `{url, token, priority?}`; webhook `{url}`.',
  );

export const channelInput = z.strictObject({
  type: z.enum(CHANNEL_TYPES),
  name: line(100).min(1),
  config: configObject,
});
export type ChannelInput = z.infer<typeof channelInput>;

export const channelPatchInput = z.strictObject({
  name: line(100).min(1).optional(),
  /** Merged over the stored config: a field left out keeps its value (masked ones included). */
  config: configObject.optional(),
});
export type ChannelPatchInput = z.infer<typeof channelPatchInput>;

export const ruleInput = z.strictObject({
  projectId: line(64).min(1).nullable(),
  events: z.array(line(64).min(1)).min(1).max(64),
  channelIds: z.array(line(64).min(1)).min(1).max(32),
});
export type RuleInput = z.infer<typeof ruleInput>;

export const deliveriesQuery = z.strictObject({
  channelId: line(64).min(1).optional(),
  limit: queryInt(1, 200).optional(),
  /** The `nextCursor` of the previous page. */
  cursor: line(128).optional(),
});
export type DeliveriesQuery = z.infer<typeof deliveriesQuery>;
