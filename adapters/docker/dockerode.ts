import { createRequire, Module } from 'node:module';
import type DockerodeClass from 'dockerode';

/**
 * dockerode, with two of its transports loaded on first use instead of at start (issue 32).
 *
 * dockerode/lib/docker.js requires ./session (@grpc/grpc-js and @grpc/proto-loader, for BuildKit sessions, which
 * our builds do not ask for) and docker-modem/lib/modem.js requires ./ssh (ssh2, for `ssh://` engines; ours are
 * a unix socket or TCP/TLS) at their top: some 150 CommonJS modules and ~10 MB of an idle platform that never
 * calls them. Before dockerode loads, each of those two files gets an entry in require's cache holding a
 * function that, on its first call, drops the entry, requires the real file and calls it; so nothing of
 * dockerode is copied or bundled, and a missing module still throws, on first use. Every value import of
 * dockerode in the platform goes through this file (the type import stays `import type ... from 'dockerode'`).
 */
const require = createRequire(import.meta.url);

function deferOnFirstCall(file: string): void {
  if (require.cache[file]) return; // already loaded (or already deferred): nothing to save
  let real: ((...args: unknown[]) => unknown) | undefined;
  const load = () => {
    if (!real) {
      delete require.cache[file];
      real = require(file) as (...args: unknown[]) => unknown;
    }
    return real;
  };
  const deferred = function (this: unknown, ...args: unknown[]) {
    return load().apply(this, args);
  };
  const entry = new Module(file);
  entry.filename = file;
  entry.loaded = true;
  entry.exports = deferred;
  require.cache[file] = entry;
}

const dockerodeMain = require.resolve('dockerode');
deferOnFirstCall(createRequire(dockerodeMain).resolve('./session'));
deferOnFirstCall(createRequire(createRequire(dockerodeMain).resolve('docker-modem')).resolve('./ssh'));

export const Docker: typeof DockerodeClass = require('dockerode');
export type Docker = DockerodeClass;
