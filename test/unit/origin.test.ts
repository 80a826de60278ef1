import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../adapters/composition/config.js';
import { assertOriginAllowed } from '../../adapters/http/origin.js';

const KEY = 'k'.repeat(40);
const load = (env: Record<string, string> = {}) => loadConfig({ DATA_DIR: ':memory:', SECRET_KEY: KEY, PROXY: 'none', ...env });
const request = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;

describe('Origin of terminal and MCP requests', () => {
  it('no Origin (a CLI, an agent) is left to the key', () => {
    expect(() => assertOriginAllowed(request({ host: 'slipway.test' }), 'https://slipway.example.com')).not.toThrow();
  });

  it('with PUBLIC_URL, its origin only', () => {
    const publicUrl = 'https://slipway.example.com';
    expect(() => assertOriginAllowed(request({ origin: publicUrl, host: 'internal:3000' }), publicUrl)).not.toThrow();
    for (const origin of ['http://slipway.example.com', 'https://slipway.example.com:8443', 'https://evil.example', 'null']) {
      expect(() => assertOriginAllowed(request({ origin, host: 'slipway.example.com' }), publicUrl), origin).toThrow(
        expect.objectContaining({ code: 'forbidden' }),
      );
    }
  });

  it('without it, the host the request was sent to', () => {
    expect(() => assertOriginAllowed(request({ origin: 'http://127.0.0.1:3000', host: '127.0.0.1:3000' }), null)).not.toThrow();
    expect(() => assertOriginAllowed(request({ origin: 'http://127.0.0.1:3001', host: '127.0.0.1:3000' }), null)).toThrow();
    expect(() => assertOriginAllowed(request({ origin: 'not a url', host: '127.0.0.1:3000' }), null)).toThrow();
  });
});

describe('terminal settings', () => {
  it('PUBLIC_URL is kept as its origin; TERMINAL_* are bounded integers', () => {
    expect(load({ PUBLIC_URL: 'https://slipway.example.com/app/' }).publicUrl).toBe('https://slipway.example.com');
    expect(load().publicUrl).toBeNull();
    expect(load().terminals).toEqual({ idleTimeoutMs: 900_000, maxPerKey: 5, ticketTtlMs: 30_000 });
    expect(load({ TERMINAL_IDLE_TIMEOUT_MS: '5000', TERMINAL_MAX_PER_KEY: '1' }).terminals).toMatchObject({
      idleTimeoutMs: 5000,
      maxPerKey: 1,
    });
    const bad: Array<Record<string, string>> = [
      { PUBLIC_URL: 'slipway.example.com' },
      { PUBLIC_URL: 'ftp://x.test' },
      { TERMINAL_MAX_PER_KEY: '0' },
      { TERMINAL_IDLE_TIMEOUT_MS: 'soon' },
    ];
    for (const env of bad) expect(() => load(env), JSON.stringify(env)).toThrow(ConfigError);
  });
});
