import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, get, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { brotliCompressSync, brotliDecompressSync, constants as zlibConstants, gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DashboardFiles, findDashboardDir, isApiPath } from '../../adapters/http/dashboard-static.js';

/** The dashboard's static serving on a build made here: what is a file, what is the app, what stays the API's. */
let dir = '';
let server: Server;
let base = '';
const SCRIPT = `console.log(${JSON.stringify('x'.repeat(4000))});`;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'slipway-dashboard-static-'));
  mkdirSync(path.join(dir, 'assets'));
  writeFileSync(
    path.join(dir, 'index.html'),
    `<!doctype html><html><head><script type="module" src="/assets/index-abc123.js"></script></head><body>${' '.repeat(600)}</body></html>`,
  );
  writeFileSync(path.join(dir, 'assets', 'index-abc123.js'), SCRIPT);
  writeFileSync(path.join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  const files = new DashboardFiles(dir);
  server = createServer((req, res) => {
    const pathname = new URL(req.url ?? '/', 'http://x').pathname;
    if (!files.serve(req, res, pathname)) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"error":"not_found"}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

describe('dashboard static files', () => {
  it('serves the app for its routes with a CSP and no caching, and hashed assets for a year', async () => {
    for (const p of ['/', '/projects', '/services/abc/deployments/def', '/index.html']) {
      const res = await fetch(`${base}${p}`);
      expect(res.status, p).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(await res.text()).toContain('/assets/index-abc123.js');
    }
    const asset = await fetch(`${base}/assets/index-abc123.js`, { headers: { 'accept-encoding': 'identity' } });
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(asset.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(asset.headers.get('content-security-policy')).toBeNull();
    expect(await asset.text()).toBe(SCRIPT);
  });

  it('compresses with brotli or gzip as the client accepts, and answers 304 to a matching ETag', async () => {
    const raw = (p: string, headers: Record<string, string>) =>
      new Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
        const req = get(`${base}${p}`, { headers }, (res: IncomingMessage) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
        });
        req.on('error', reject);
      });
    const br = await raw('/assets/index-abc123.js', { 'accept-encoding': 'gzip, deflate, br' });
    expect(br.headers['content-encoding']).toBe('br');
    expect(brotliDecompressSync(br.body).toString()).toBe(SCRIPT);
    const gz = await raw('/assets/index-abc123.js', { 'accept-encoding': 'gzip' });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.body).toString()).toBe(SCRIPT);
    expect(gz.headers.vary).toBe('Accept-Encoding');
    const again = await raw('/assets/index-abc123.js', { 'if-none-match': String(gz.headers.etag) });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
  });

  it('never answers for the API, a missing asset or a file-like path, nor for writes', async () => {
    for (const p of ['/api', '/api/nothing', '/trpc', '/trpc/x.y', '/assets/missing.js', '/robots.txt', '/favicon.ico']) {
      const res = await fetch(`${base}${p}`);
      expect(res.status, p).toBe(404);
      expect(await res.text(), p).toBe('{"error":"not_found"}');
    }
    expect((await fetch(`${base}/projects`, { method: 'POST' })).status).toBe(404);
    const head = await fetch(`${base}/projects`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(isApiPath('/apis')).toBe(false);
    expect(isApiPath('/api/x')).toBe(true);
  });

  it('finds the build from DASHBOARD_DIR, and says none when it is not there', () => {
    const saved = process.env.DASHBOARD_DIR;
    try {
      process.env.DASHBOARD_DIR = dir;
      expect(findDashboardDir()).toBe(dir);
      process.env.DASHBOARD_DIR = path.join(dir, 'nowhere');
      expect(findDashboardDir()).toBeNull();
    } finally {
      if (saved === undefined) delete process.env.DASHBOARD_DIR;
      else process.env.DASHBOARD_DIR = saved;
    }
  });

  it("serves the build's precompressed siblings as they are, never as files of their own, and reads nothing before a request", async () => {
    const own = mkdtempSync(path.join(tmpdir(), 'slipway-dashboard-precompressed-'));
    try {
      mkdirSync(path.join(own, 'assets'));
      const script = `console.log(${JSON.stringify('y'.repeat(3000))});`;
      writeFileSync(path.join(own, 'index.html'), '<!doctype html><title>x</title>');
      writeFileSync(path.join(own, 'assets', 'app-1.js'), script);
      // Other settings than the platform's own, so the bytes show which copy was served.
      const br = brotliCompressSync(script, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 1 } });
      const gz = gzipSync(script, { level: 1 });
      writeFileSync(path.join(own, 'assets', 'app-1.js.br'), br);
      writeFileSync(path.join(own, 'assets', 'app-1.js.gz'), gz);
      const files = new DashboardFiles(own);
      // Listed at start, read at the first request: a file written after the listing is what is served.
      writeFileSync(path.join(own, 'index.html'), '<!doctype html><title>later</title>');
      const local = createServer((req, res) => {
        if (!files.serve(req, res, new URL(req.url ?? '/', 'http://x').pathname)) {
          res.writeHead(404);
          res.end();
        }
      });
      await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
      const at = `http://127.0.0.1:${(local.address() as { port: number }).port}`;
      const body = (p: string, encoding: string) =>
        new Promise<{ status: number; encoding: unknown; body: Buffer }>((resolve, reject) => {
          get(`${at}${p}`, { headers: { 'accept-encoding': encoding } }, (res: IncomingMessage) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              resolve({ status: res.statusCode!, encoding: res.headers['content-encoding'], body: Buffer.concat(chunks) }),
            );
          }).on('error', reject);
        });
      try {
        const viaBr = await body('/assets/app-1.js', 'br');
        expect(viaBr.encoding).toBe('br');
        expect(viaBr.body.equals(br)).toBe(true);
        const viaGz = await body('/assets/app-1.js', 'gzip');
        expect(viaGz.encoding).toBe('gzip');
        expect(viaGz.body.equals(gz)).toBe(true);
        expect((await body('/assets/app-1.js', 'identity')).body.toString()).toBe(script);
        expect((await body('/assets/app-1.js.br', 'identity')).status).toBe(404);
        expect((await body('/assets/app-1.js.gz', 'identity')).status).toBe(404);
        expect((await body('/', 'identity')).body.toString()).toContain('later');
      } finally {
        await new Promise((resolve) => local.close(resolve));
      }
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  });
});
