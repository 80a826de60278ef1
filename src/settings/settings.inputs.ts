import { z } from 'zod';
import { line } from '../platform/input-schemas.js';
import { DNS_PROVIDER_IDS } from '../platform/views.js';

/** What changing the platform settings takes, declared once: the router uses it, the use case takes the parsed type. */
export const settingsInput = z.strictObject({
  publicIp: line(64).nullish(),
  rootDomain: line(253).nullish(),
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
