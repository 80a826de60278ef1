import { z } from 'zod';
import { timestamp } from '../platform/view-fields.js';

/** The platform settings, the license and what anyone may read of the install, as the routers answer them. */

export const DNS_PROVIDER_IDS = ['cloudflare', 'digitalocean', 'hetzner'] as const;

export const AI_PROVIDER_KINDS = ['openai', 'anthropic'] as const;
export type AiProviderKind = (typeof AI_PROVIDER_KINDS)[number];

export const licenseView = z
  .object({
    valid: z.boolean().meta({ description: 'A verified license that has not expired is active' }),
    licensee: z.string().nullable(),
    plan: z.string().nullable(),
    expiresAt: timestamp.nullable(),
  })
  .meta({ id: 'License', description: 'All null and valid false when no license was activated: the platform works without one' });
export type LicenseView = z.infer<typeof licenseView>;

export const publicSystemView = z
  .object({
    version: z.string(),
    registrationOpen: z.boolean(),
    ownerExists: z
      .boolean()
      .meta({ description: 'false until the first account (the owner) signs up: the dashboard then offers owner sign-up' }),
    features: z.array(z.string()).meta({ description: 'Enabled features: `databases`, `deployments`, `reverse-proxy`, `dns`' }),
    license: licenseView,
  })
  .meta({ id: 'PublicSystem' });
export type PublicSystemView = z.infer<typeof publicSystemView>;

export const settingsView = z
  .object({
    license: licenseView,
    publicIp: z.string(),
    rootDomain: z.string().nullable(),
    registrationOpen: z.boolean().meta({ description: 'Whether anyone may sign up once the owner exists' }),
    smtpConfigured: z.boolean().meta({ description: 'An SMTP server is set here (its URL is write-only); else SMTP_URL applies' }),
    mailFrom: z.string().nullable(),
    dnsProviders: z.array(
      z.object({
        providerId: z.enum(DNS_PROVIDER_IDS),
        providerName: z.string(),
        hasApiToken: z.boolean(),
        connectedAt: timestamp,
      }),
    ),
    aiProviders: z.array(
      z.object({
        providerId: z.string(),
        kind: z.enum(AI_PROVIDER_KINDS).meta({
          description: '`openai`: the Chat Completions wire format (also compatible local servers); `anthropic`: the Messages API',
        }),
        baseUrl: z.string().nullable().meta({ description: "null: the vendor's own API" }),
        hasApiKey: z.boolean(),
        connectedAt: timestamp,
      }),
    ),
    objectStore: z
      .object({
        endpoint: z.string(),
        region: z.string(),
        bucket: z.string(),
        accessKeyId: z.string(),
        forcePathStyle: z.boolean(),
        hasSecretAccessKey: z.boolean(),
      })
      .nullable()
      .meta({ description: 'The S3-compatible store backups go to; the secret is never shown' }),
  })
  .meta({ id: 'Settings' });
export type SettingsView = z.infer<typeof settingsView>;
