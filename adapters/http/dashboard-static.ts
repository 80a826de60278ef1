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

/** A file of the build as found at start: read (and compressed) on its first request, not before. */
interface BuildEntry {
  full: string;
  ext: string;
  mtimeMs: number;
}

/** The build's precompressed siblings (written by packages/dashboard's Vite build): `<file>.br`, `<file>.gz`. */
const PRECOMPRESSED = ['.br', '.gz'] as const;

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
  // Start only lists the build: compressing it there cost every start ~1.7 s of CPU and kept it all in
  // memory whether or not anyone opened the dashboard (API-only installs, scripts, CI).
  private readonly entries = new Map<string, BuildEntry>();
  private readonly files = new Map<string, StaticFile>();

  constructor(private readonly root: string) {
    this.list(root, '');
  }

  static fromBuild(dir = findDashboardDir()): DashboardFiles | null {
    return dir ? new DashboardFiles(dir) : null;
  }

  private list(dir: string, prefix: string): void {
    const names = new Set(readdirSync(dir));
    for (const name of names) {
      const full = path.join(dir, name);
      const stat = statSync(full);
      if (stat.isDirectory()) {
        this.list(full, `${prefix}/${name}`);
        continue;
      }
      // A precompressed sibling is served as its original's encoding, never as a file of its own.
      if (PRECOMPRESSED.some((suffix) => name.endsWith(suffix) && names.has(name.slice(0, -suffix.length)))) continue;
      this.entries.set(`${prefix}/${name}`, { full, ext: path.extname(name).toLowerCase(), mtimeMs: stat.mtimeMs });
    }
  }

  /** The file at `urlPath`, read on its first request and kept: the whole build is a few hundred kB. */
  private file(urlPath: string): StaticFile | undefined {
    const cached = this.files.get(urlPath);
    if (cached) return cached;
    const entry = this.entries.get(urlPath);
    if (!entry) return undefined;
    const body = readFileSync(entry.full);
    const file: StaticFile = {
      body,
      type: TYPES[entry.ext] ?? 'application/octet-stream',
      etag: `"${body.length.toString(16)}-${entry.mtimeMs.toString(16)}"`,
      immutable: urlPath.startsWith('/assets/'),
    };
    if (COMPRESSIBLE.has(entry.ext) && body.length > 512) {
      file.br = precompressed(entry, '.br') ?? brotliCompressSync(body, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 11 } });
      file.gzip = precompressed(entry, '.gz') ?? gzipSync(body, { level: 9 });
    }
    this.files.set(urlPath, file);
    return file;
  }

  /**
   * Answers a GET or HEAD for the dashboard: a file of the build, or index.html for a path of the
   * single-page app (no extension, not under /assets/). Resolves false for anything else, which the
   * caller answers as before (API paths are never looked at).
   */
  serve(req: IncomingMessage, res: ServerResponse, pathname: string): boolean {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    if (isApiPath(pathname)) return false;
    let file = this.file(pathname);
    if (!file) {
      // A missing hashed asset or file is a 404, never the app: a stale page must not get HTML for its script.
      if (pathname.startsWith('/assets/') || path.extname(pathname) !== '') return false;
      file = this.file('/index.html');
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

/** The build's compressed copy of a file, when it has one no older than the file itself (else null: compress here). */
function precompressed(entry: BuildEntry, suffix: (typeof PRECOMPRESSED)[number]): Buffer | null {
  try {
    const sibling = `${entry.full}${suffix}`;
    return statSync(sibling).mtimeMs >= entry.mtimeMs ? readFileSync(sibling) : null;
  } catch {
    return null;
  }
}
