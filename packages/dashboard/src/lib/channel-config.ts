/**
 * A notification channel's settings as form fields, per type (docs/events.md, Notification channels),
 * and the `config` object the API takes from what was typed. Secret fields come back masked: on an
 * edit, one left blank keeps its stored value (the API merges a PATCH's config over the stored one).
 */
export const CHANNEL_TYPES = ['email', 'slack', 'discord', 'telegram', 'teams', 'ntfy', 'gotify', 'webhook'] as const;
export type ChannelType = (typeof CHANNEL_TYPES)[number];

export interface ConfigField {
  key: string;
  label: string;
  kind: 'text' | 'url' | 'list' | 'number';
  secret?: boolean;
  optional?: boolean;
  hint?: string;
}

const url = (key: string, label: string, hint?: string): ConfigField => ({
  key,
  label,
  kind: 'url',
  secret: true,
  ...(hint ? { hint } : {}),
});

export const CHANNEL_FIELDS: Record<ChannelType, ConfigField[]> = {
  email: [{ key: 'to', label: 'Recipients', kind: 'list', hint: 'Email addresses, separated by commas' }],
  slack: [url('webhookUrl', 'Slack webhook URL')],
  discord: [url('webhookUrl', 'Discord webhook URL')],
  teams: [url('webhookUrl', 'Teams webhook URL')],
  telegram: [
    { key: 'botToken', label: 'Bot token', kind: 'text', secret: true, hint: '123456:ABC-DEF...' },
    { key: 'chatId', label: 'Chat id', kind: 'text', hint: 'A number (groups and channels are negative)' },
  ],
  ntfy: [
    url('url', 'Topic URL'),
    { key: 'token', label: 'Access token', kind: 'text', secret: true, optional: true },
    { key: 'priority', label: 'Priority (1-5)', kind: 'number', optional: true },
  ],
  gotify: [
    { key: 'url', label: 'Server URL', kind: 'url' },
    { key: 'token', label: 'Application token', kind: 'text', secret: true },
    { key: 'priority', label: 'Priority (0-10)', kind: 'number', optional: true },
  ],
  webhook: [url('url', 'Webhook URL', 'Signed with Standard Webhooks: the signing secret is shown once, after saving')],
};

export const CHANNEL_LABELS: Record<ChannelType, string> = {
  email: 'Email',
  slack: 'Slack',
  discord: 'Discord',
  telegram: 'Telegram',
  teams: 'Microsoft Teams',
  ntfy: 'ntfy',
  gotify: 'Gotify',
  webhook: 'Signed webhook',
};

/**
 * The `config` to send. A blank field is left out (on an edit: kept as stored); numbers are sent as
 * numbers when they read as one, otherwise as typed so that the API names the field it refuses.
 */
export function configFrom(type: ChannelType, values: Record<string, string>): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  for (const field of CHANNEL_FIELDS[type]) {
    const raw = (values[field.key] ?? '').trim();
    if (!raw) continue;
    if (field.kind === 'list') {
      config[field.key] = raw
        .split(/[,\n]/)
        .map((s) => s.trim())
        .filter(Boolean);
    } else if (field.kind === 'number') {
      config[field.key] = /^-?\d+$/.test(raw) ? Number(raw) : raw;
    } else {
      config[field.key] = raw;
    }
  }
  return config;
}

/** The form's values from a channel as the API shows it: secret fields blank (they are masked). */
export function valuesFrom(type: ChannelType, config: Record<string, unknown>): Record<string, string> {
  const values: Record<string, string> = {};
  for (const field of CHANNEL_FIELDS[type]) {
    const value = config[field.key];
    if (field.secret || value === undefined || value === null) values[field.key] = '';
    else values[field.key] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return values;
}

/** What a list shows of a channel's target: its non-secret settings, the masked ones as the API gave them. */
export function describeConfig(config: Record<string, unknown>): string {
  return Object.entries(config)
    .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(', ') : String(v)}`)
    .join('; ');
}
