import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants as zlibConstants, gzipSync } from 'node:zlib';

/**
 * The web dashboard (packages/dashboard, built by Vite into dist/dashboard), served at `/` on the API's
 * origin. Hashed files under /assets/ are cached for a year; index.html is revalidated on every load,
 * so a new release is picked up at once. Text files are compressed once (brotli and gzip) and kept in
 * memory: the whole build is a few hundred kB. Every page carries a Content-Security-Policy that lets
 * the page load scripts from this origin only and talk to nothing but this origin.
 */

/** Scripts from this origin only (no inline script, no eval); styles too, plus the inline styles xterm.js and Radix set. */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "worker-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
};
const COMPRESSIBLE = new Set(['.html', '.js', '.css', '.svg', '.json', '.txt', '.webmanifest']);

interface StaticFile {
  body: Buffer;
  type: string;
  etag: string;
  immutable: boolean;
  gzip?: Buffer;
  br?: Buffer;
}

/** Where the built dashboard is: DASHBOARD_DIR, else dist/dashboard found upwards from this module (source or bundle). */
export function findDashboardDir(from = path.dirname(fileURLToPath(import.meta.url))): string | null {
  const configured = process.env.DASHBOARD_DIR;
  if (configured) return existsSync(path.join(configured, 'index.html')) ? configured : null;
  let dir = from;
  for (let i = 0; i < 6; i++) {
    for (const candidate of [path.join(dir, 'dashboard'), path.join(dir, 'dist', 'dashboard')]) {
      if (existsSync(path.join(candidate, 'index.html'))) return candidate;
    }
    dir = path.dirname(dir);
  }
  return null;
}

/** The paths the dashboard must never answer: the API's own, whose 404s stay the API's JSON. */
export function isApiPath(pathname: string): boolean {
  return pathname === '/api' || pathname.startsWith('/api/') || pathname === '/trpc' || pathname.startsWith('/trpc/');
}

export class DashboardFiles {
  private readonly files = new Map<string, StaticFile>();

  constructor(private readonly root: string) {
    this.load(root, '');
  }

  static fromBuild(dir = findDashboardDir()): DashboardFiles | null {
    return dir ? new DashboardFiles(dir) : null;
  }

  private load(dir: string, prefix: string): void {
    for (const name of readdirSync(dir)) {
      const full = path.join(dir, name);
      const urlPath = `${prefix}/${name}`;
      if (statSync(full).isDirectory()) {
        this.load(full, urlPath);
        continue;
      }
      const body = readFileSync(full);
      const ext = path.extname(name).toLowerCase();
      const file: StaticFile = {
        body,
        type: TYPES[ext] ?? 'application/octet-stream',
        etag: `"${body.length.toString(16)}-${statSync(full).mtimeMs.toString(16)}"`,
        immutable: urlPath.startsWith('/assets/'),
      };
      if (COMPRESSIBLE.has(ext) && body.length > 512) {
        file.gzip = gzipSync(body, { level: 9 });
        file.br = brotliCompressSync(body, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 11 } });
      }
      this.files.set(urlPath, file);
    }
  }

  /**
   * Answers a GET or HEAD for the dashboard: a file of the build, or index.html for a path of the
   * single-page app (no extension, not under /assets/). Resolves false for anything else, which the
   * caller answers as before (API paths are never looked at).
   */
  serve(req: IncomingMessage, res: ServerResponse, pathname: string): boolean {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    if (isApiPath(pathname)) return false;
    let file = this.files.get(pathname);
    if (!file) {
      // A missing hashed asset or file is a 404, never the app: a stale page must not get HTML for its script.
      if (pathname.startsWith('/assets/') || path.extname(pathname) !== '') return false;
      file = this.files.get('/index.html');
      if (!file) return false;
    }
    const headers: Record<string, string> = {
      'content-type': file.type,
      'cache-control': file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
      etag: file.etag,
      vary: 'Accept-Encoding',
      'x-content-type-options': 'nosniff',
    };
    if (file.type.startsWith('text/html')) {
      headers['content-security-policy'] = DASHBOARD_CSP;
      headers['referrer-policy'] = 'same-origin';
      headers['x-frame-options'] = 'DENY';
      headers['cross-origin-opener-policy'] = 'same-origin';
    }
    if (req.headers['if-none-match'] === file.etag) {
      res.writeHead(304, headers);
      res.end();
      return true;
    }
    const accepts = String(req.headers['accept-encoding'] ?? '');
    let body = file.body;
    if (file.br && /\bbr\b/.test(accepts)) {
      body = file.br;
      headers['content-encoding'] = 'br';
    } else if (file.gzip && /\bgzip\b/.test(accepts)) {
      body = file.gzip;
      headers['content-encoding'] = 'gzip';
    }
    headers['content-length'] = String(body.length);
    res.writeHead(200, headers);
    res.end(req.method === 'HEAD' ? undefined : body);
    return true;
  }
}
