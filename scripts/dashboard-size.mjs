// The dashboard's first load: the JavaScript index.html loads before any screen (its module script and
// the modules it preloads), gzipped, against the budget of 200 kB. Screens load later, per route.
// Usage: node scripts/dashboard-size.mjs [dist/dashboard]   (prints one JSON line; exit 1 over budget)
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

const BUDGET = 200 * 1000;
const dir = path.resolve(process.argv[2] ?? 'dist/dashboard');
const html = readFileSync(path.join(dir, 'index.html'), 'utf8');
const files = [
  ...html.matchAll(/<script[^>]*\ssrc="([^"]+\.js)"/g),
  ...html.matchAll(/<link[^>]*rel="modulepreload"[^>]*href="([^"]+\.js)"/g),
].map((m) => m[1]);
let total = 0;
const parts = files.map((file) => {
  const gz = gzipSync(readFileSync(path.join(dir, file)), { level: 9 }).length;
  total += gz;
  return { file, gzipBytes: gz };
});
const chunks = readFileSync(path.join(dir, 'index.html'), 'utf8').length;
console.log(JSON.stringify({ shellGzipBytes: total, budgetBytes: BUDGET, files: parts, indexHtmlBytes: chunks }));
process.exit(total <= BUDGET ? 0 : 1);
