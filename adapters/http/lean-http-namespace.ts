import { createRequire } from 'node:module';

/**
 * The first `import ... from 'node:http'` makes Node build that module's ES namespace, which reads every
 * export of `require('node:http')` once, lazy getters included: `WebSocket`, `CloseEvent` and
 * `MessageEvent` load Node's bundled undici (with web streams, worker_threads and perf_hooks), some 17 MB
 * of RSS on Node 26 that a CommonJS server such as koa never pays (issue 32). Our bundle and
 * `@trpc/server`'s adapters import `node:http` as ES modules, and none of them uses those three.
 *
 * So the entry point builds that namespace first, while the three getters answer `undefined`, and puts
 * Node's getters back at once: `require('node:http').WebSocket` and the globals stay Node's own, lazy as
 * before; only an ES import of those three names from `node:http` would see `undefined` (nothing we load
 * has one). A Node without these getters, or with them made unconfigurable, is left as it is.
 */
export async function buildHttpNamespaceWithoutUndici(): Promise<void> {
  const http = createRequire(import.meta.url)('node:http') as Record<string, unknown>;
  const saved = new Map<string, PropertyDescriptor>();
  for (const name of ['WebSocket', 'CloseEvent', 'MessageEvent']) {
    const descriptor = Object.getOwnPropertyDescriptor(http, name);
    if (!descriptor?.get || !descriptor.configurable) continue;
    saved.set(name, descriptor);
    Object.defineProperty(http, name, { configurable: true, enumerable: descriptor.enumerable, get: () => undefined });
  }
  try {
    await import('node:http');
  } finally {
    for (const [name, descriptor] of saved) Object.defineProperty(http, name, descriptor);
  }
}
