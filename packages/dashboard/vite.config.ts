import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

/**
 * The dashboard is built into the platform's dist/dashboard, which adapters/http/dashboard-static.ts
 * serves at `/`. `npm run dev -w @slipway/dashboard` serves it with live reload and forwards the API
 * (`/api`, `/trpc`, the terminal WebSockets) to a running platform: SLIPWAY_URL, default http://127.0.0.1:3000.
 */
const target = process.env.SLIPWAY_URL ?? 'http://127.0.0.1:3000';
// The platform honours the session cookie for a state change only from its own origin: the dev server
// forwards requests as if the page came from there.
const sameOrigin = { target, changeOrigin: true, headers: { origin: new URL(target).origin } };

export default defineConfig({
  plugins: [react()],
  build: {
    outDir: fileURLToPath(new URL('../../dist/dashboard', import.meta.url)),
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
