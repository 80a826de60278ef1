import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';

export interface Credentials {
  url: string;
  token: string;
}

/** Where `slipway login` keeps the server and key: the user's config dir, as other CLIs do (XDG on Linux, AppData on Windows). */
export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SLIPWAY_CONFIG) return env.SLIPWAY_CONFIG;
  const base =
    process.platform === 'win32'
      ? (env.APPDATA ?? path.join(homedir(), 'AppData', 'Roaming'))
      : env.XDG_CONFIG_HOME || path.join(homedir(), '.config');
  return path.join(base, 'slipway', 'config.json');
}

export function readConfig(env: NodeJS.ProcessEnv = process.env): Partial<Credentials> {
  try {
    const parsed = JSON.parse(readFileSync(configPath(env), 'utf8')) as Partial<Credentials>;
    return {
      url: typeof parsed.url === 'string' ? parsed.url : undefined,
      token: typeof parsed.token === 'string' ? parsed.token : undefined,
    };
  } catch {
    return {};
  }
}

/** The key is a secret: the file is the user's alone (0600, in a 0700 directory), whatever the umask. */
export function writeConfig(credentials: Credentials, env: NodeJS.ProcessEnv = process.env): string {
  const file = configPath(env);
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, `${JSON.stringify({ url: credentials.url, token: credentials.token }, null, 2)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return file;
}

export function removeConfig(env: NodeJS.ProcessEnv = process.env): void {
  rmSync(configPath(env), { force: true });
}

/** SLIPWAY_URL and SLIPWAY_TOKEN win over the stored login, so CI needs no login step. */
export function credentials(env: NodeJS.ProcessEnv = process.env): Partial<Credentials> {
  const stored = readConfig(env);
  return { url: env.SLIPWAY_URL || stored.url, token: env.SLIPWAY_TOKEN || stored.token };
}
