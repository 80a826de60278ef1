import { z } from 'zod';
import { line, strictBoolean } from '../platform/input-schemas.js';
import { DNS_PROVIDER_IDS } from '../platform/views.js';

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
});
/** dnsProviders replaces the list; an entry without apiToken keeps the token it had. */
export type SettingsInput = z.output<typeof settingsInput>;
