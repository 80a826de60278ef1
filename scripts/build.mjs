/**
 * `npm run build`: the server and CLI bundles (dist/), packages external as before, with one exception.
 *
 * dockerode stays the Docker library, but two of its files require heavy transports at their top that a
 * platform talking to a unix socket (or TCP/TLS) never uses: dockerode/lib/session.js (@grpc/grpc-js and
 * @grpc/proto-loader, for BuildKit sessions with registry credentials) and docker-modem/lib/ssh.js (ssh2, for
 * `ssh://` engines). Their loading cost ~20 MB of RSS at idle (docs/performance.md). So the two files that
 * require them, dockerode/lib/docker.js and docker-modem/lib/modem.js, are bundled (unchanged), every other
 * file of both packages is still required from node_modules, and those two requires resolve to shims that
 * require the real module on first call. If the real module is missing then, require throws as it would have
 * at start: the lazy path fails loudly, it never falls back silently.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { build } from 'esbuild';

const ROOT = path.resolve(import.meta.dirname, '..');
const require = createRequire(path.join(ROOT, 'package.json'));

const DOCKERODE_MAIN = require.resolve('dockerode');
const MODEM_MAIN = require.resolve('docker-modem');
/** The real module each shim defers to, by the file that requires it and the specifier it uses. */
const LAZY = new Map([
  [`${DOCKERODE_MAIN}\0./session`, 'dockerode/lib/session.js'],
  [`${MODEM_MAIN}\0./ssh`, 'docker-modem/lib/ssh.js'],
]);
const PACKAGE_OF = new Map([
  [DOCKERODE_MAIN, 'dockerode'],
  [MODEM_MAIN, 'docker-modem'],
]);

/** @type {import('esbuild').Plugin} */
const lazyDockerTransports = {
  name: 'lazy-docker-transports',
  setup(b) {
    b.onResolve({ filter: /^dockerode$/ }, () => ({ path: DOCKERODE_MAIN }));
    b.onResolve({ filter: /^docker-modem$/ }, (args) => (args.importer === DOCKERODE_MAIN ? { path: MODEM_MAIN } : undefined));
    b.onResolve({ filter: /^\.\.?\// }, (args) => {
      const pkg = PACKAGE_OF.get(args.importer);
      if (!pkg) return undefined;
      const lazy = LAZY.get(`${args.importer}\0${args.path}`);
      if (lazy) return { path: lazy, namespace: 'lazy-cjs' };
      // Every other file of the package is required from node_modules, as without the bundle.
      const file = path.relative(
        path.dirname(require.resolve(`${pkg}/package.json`)),
        path.resolve(path.dirname(args.importer), args.path),
      );
      return { path: `${pkg}/${file.split(path.sep).join('/')}`, external: true };
    });
    b.onLoad({ filter: /.*/, namespace: 'lazy-cjs' }, (args) => {
      require.resolve(args.path); // the real module must exist at build time
      return {
        loader: 'js',
        contents: `// Loaded on first call (scripts/build.mjs): ${args.path}
let real;
module.exports = function lazy(...args) {
  real ??= require(${JSON.stringify(args.path)});
  return new.target ? new real(...args) : real.apply(this, args);
};`,
      };
    });
    b.onResolve({ filter: /^(dockerode|docker-modem)\/lib\// }, (args) =>
      args.namespace === 'lazy-cjs' ? { path: args.path, external: true } : undefined,
    );
  },
};

await build({
  entryPoints: ['adapters/http/main.ts', 'adapters/cli/main.ts'],
  absWorkingDir: ROOT,
  bundle: true,
  platform: 'node',
  format: 'esm',
  packages: 'external',
  target: 'node22',
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  outbase: '.',
  // `node scripts/build.mjs <dir>` builds elsewhere (a check beside a running server); `dist` otherwise.
  outdir: process.argv[2] ?? 'dist',
  outExtension: { '.js': '.mjs' },
  logLevel: 'warning',
  plugins: [lazyDockerTransports],
  // The bundled CommonJS files require their neighbours and Node's modules: an ES module has no `require`.
  banner: {
    js: "import { createRequire as __slipwayCreateRequire } from 'node:module'; const require = __slipwayCreateRequire(import.meta.url);",
  },
});
