import { z } from 'zod';
import { line, strictBoolean } from '../platform/input-schemas.js';
import { AI_PROVIDER_KINDS, DNS_PROVIDER_IDS } from './settings-views.js';

/** What changing the platform settings takes, declared once: the router uses it, the use case takes the parsed type. */
export const settingsInput = z.strictObject({
  publicIp: line(64).nullish(),
  rootDomain: line(253).nullish(),
  registrationOpen: strictBoolean()
    .optional()
    .meta({ description: 'Whether anyone may sign up (POST /api/auth/signup) once the owner exists; default false' }),
  smtpUrl: line(2048).nullish().meta({
    description:
      'Write-only: smtp://user:password@host:587 or smtps://...:465 for password-reset mail; null or empty clears (SMTP_URL applies)',
  }),
  mailFrom: line(320).nullish().meta({ description: 'Sender of that mail' }),
  dnsProviders: z
    .array(
      z.strictObject({
        providerId: z.enum(DNS_PROVIDER_IDS),
        apiToken: line(4096).min(1).optional().meta({ description: 'Write-only; omit to keep the stored token' }),
      }),
    )
    .max(10)
    .optional()
    .meta({ description: 'Replaces the connected providers' }),
  aiProviders: z
    .array(
      z.strictObject({
        providerId: line(64)
          .regex(/^[a-z0-9][a-z0-9-]*$/, { message: 'lower-case letters, digits and hyphens' })
          .meta({ description: 'Your name for the connection, used as providerId in explain-failure and diagnostics' }),
        kind: z.enum(AI_PROVIDER_KINDS),
        baseUrl: line(2048)
          .nullish()
          .meta({ description: "http(s) URL of the API (a compatible or local server); omit for the vendor's own" }),
        apiKey: line(4096).min(1).optional().meta({ description: 'Write-only; omit to keep the stored key' }),
      }),
    )
    .max(10)
    .optional()
    .meta({ description: 'Replaces the connected AI providers' }),
  objectStore: z
    .strictObject({
      endpoint: line(2048).min(1).meta({ description: 'S3-compatible endpoint URL, e.g. https://s3.eu-central-1.amazonaws.com' }),
      region: line(64).min(1),
      bucket: line(63).min(3),
      accessKeyId: line(256).min(1),
      secretAccessKey: line(1024).min(1).optional().meta({ description: 'Write-only, stored encrypted; omit to keep the stored one' }),
      forcePathStyle: z.boolean().default(true),
    })
    .nullish()
    .meta({ description: 'Where backups with storage `object` go; null disconnects it' }),
});
/** dnsProviders replaces the list; an entry without apiToken keeps the token it had. */
export type SettingsInput = z.output<typeof settingsInput>;
