import type { ImportSource } from '../domain/database-imports.js';
import { ValidationError } from '../domain/errors.js';

const PROTOCOLS: Record<ImportSource, readonly string[]> = {
  'postgres-url': ['postgres:', 'postgresql:'],
  'redis-url': ['redis:', 'rediss:'],
};

export interface ParsedSource {
  url: URL;
  /** `host:port/database`: what the import row shows; no user, password or query. */
  label: string;
  /** What a log line or an error must never show: the password (raw and decoded) and the URL itself. */
  secrets: string[];
}

/** A source URL of the import's kind, checked: the 400 names `sourceUrl` and never echoes the URL. */
export function parseSourceUrl(source: ImportSource, raw: string): ParsedSource {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new ValidationError('sourceUrl', 'sourceUrl: not a valid URL');
  }
  const protocols = PROTOCOLS[source];
  if (!protocols.includes(url.protocol))
    throw new ValidationError('sourceUrl', `sourceUrl: must start with ${protocols.map((p) => `${p}//`).join(' or ')}`);
  if (!url.hostname) throw new ValidationError('sourceUrl', 'sourceUrl: must name a host');
  const defaultPort = source === 'postgres-url' ? '5432' : '6379';
  const database = decodeSafe(url.pathname.replace(/^\//, ''));
  const label = `${url.hostname}:${url.port || defaultPort}${database ? `/${database}` : ''}`.slice(0, 512);
  const password = url.password;
  const secrets = [raw, raw.trim(), password, decodeSafe(password)].filter((s) => s.length > 0);
  return { url, label, secrets };
}

function decodeSafe(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** Every secret replaced by `********`, longest first (a password inside the URL is covered by the URL). */
export function maskSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of [...secrets].sort((a, b) => b.length - a.length))
    if (secret.length >= 1 && out.includes(secret)) out = out.split(secret).join('********');
  return out;
}
