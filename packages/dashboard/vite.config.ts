import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants as zlibConstants, gzipSync } from 'node:zlib';
import react from '@vitejs/plugin-react';
import { defineConfig, type Plugin } from 'vite';

/**
 * The dashboard is built into the platform's dist/dashboard, which adapters/http/dashboard-static.ts
 * serves at `/`. `npm run dev -w @slipway/dashboard` serves it with live reload and forwards the API
 * (`/api`, `/trpc`, the terminal WebSockets) to a running platform: SLIPWAY_URL, default http://127.0.0.1:3000.
 */
const target = process.env.SLIPWAY_URL ?? 'http://127.0.0.1:3000';
// The platform honours the session cookie for a state change only from its own origin: the dev server
// forwards requests as if the page came from there.
const sameOrigin = { target, changeOrigin: true, headers: { origin: new URL(target).origin } };
const outDir = fileURLToPath(new URL('../../dist/dashboard', import.meta.url));

/**
 * Writes `<file>.br` and `<file>.gz` beside each text file of the build, once, here: the platform serves
 * them as they are instead of compressing the build at every start (dashboard-static.ts).
 */
function precompress(): Plugin {
  const compressible = /\.(html|js|css|svg|json|txt|webmanifest)$/;
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = path.join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (compressible.test(name)) {
        const body = readFileSync(full);
        if (body.length <= 512) continue;
        writeFileSync(`${full}.br`, brotliCompressSync(body, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 11 } }));
        writeFileSync(`${full}.gz`, gzipSync(body, { level: 9 }));
      }
    }
  };
  return { name: 'slipway-precompress', apply: 'build', closeBundle: () => walk(outDir) };
}

export default defineConfig({
  plugins: [react(), precompress()],
  build: {
    outDir,
    emptyOutDir: true,
    // No inline script: the Content-Security-Policy allows scripts from the platform's origin only.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    target: 'es2022',
    reportCompressedSize: false,
  },
  server: {
    proxy: {
      '/api': { ...sameOrigin, ws: true },
      '/trpc': sameOrigin,
    },
  },
});
