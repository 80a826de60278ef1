import { mkdir, readdir, readFile, rename, rm, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ALL_HOSTNAMES_DIR, type ServiceRoute } from './caddy-config.js';

/** Which table the directory (and the configuration Caddy was given with it) was last brought to. */
export interface RoutesStamp {
  version: string;
  digest: string;
}

const STAMP = 'table.json';
const GENERATION = /^[0-9a-f]{16}$/;
const PARALLEL = 32;

/**
 * The hostnames Caddy routes, as files: `<root>/<digest>/<route dir>/<hostname>` (empty files; Caddy's
 * `file` matcher checks that one exists) and `<root>/<digest>/_all/<hostname>`. A configuration reads
 * the generation named by its digest only, so a new configuration gets a directory of its own, filled
 * before it is loaded, and the one still serving is never touched by a load that Caddy may refuse.
 * The platform is the only writer: it brings the directory to the table at every apply, whatever an
 * earlier process left. The root itself is never removed (Caddy's container has it bind-mounted).
 */
export class RoutesDirectory {
  constructor(readonly root: string) {}

  async ensureRoot(): Promise<void> {
    await mkdir(this.root, { recursive: true, mode: 0o755 });
  }

  /** Null when there is none, or an apply was cut short after it changed files. */
  async stamp(): Promise<RoutesStamp | null> {
    try {
      const parsed = JSON.parse(await readFile(path.join(this.root, STAMP), 'utf8')) as Partial<RoutesStamp>;
      return typeof parsed.version === 'string' && typeof parsed.digest === 'string'
        ? { version: parsed.version, digest: parsed.digest }
        : null;
    } catch {
      return null;
    }
  }

  async clearStamp(): Promise<void> {
    await unlink(path.join(this.root, STAMP)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  }

  /** Written whole or not at all (a rename), so a reader never sees half a stamp. */
  async writeStamp(stamp: RoutesStamp): Promise<void> {
    const temporary = path.join(this.root, `${STAMP}.${process.pid}.tmp`);
    await writeFile(temporary, JSON.stringify(stamp), { mode: 0o644 });
    await rename(temporary, path.join(this.root, STAMP));
  }

  /**
   * Brings `<root>/<digest>` to hold exactly the routes' hostnames. Every file to create is created
   * before any is removed (creating and unlinking a file are each atomic), the flat `_all` first: a
   * hostname that moves from one service to another is in the new one's directory before it leaves
   * the old one's, so it is never routed nowhere, and never refused a certificate while routed.
   */
  async sync(digest: string, routes: ServiceRoute[]): Promise<{ added: number; removed: number }> {
    if (!GENERATION.test(digest)) throw new Error(`not a routes generation: ${JSON.stringify(digest)}`);
    const generation = path.join(this.root, digest);
    await mkdir(generation, { recursive: true, mode: 0o755 });
    const wanted = new Map<string, Set<string>>([[ALL_HOSTNAMES_DIR, new Set(routes.flatMap((r) => r.hostnames))]]);
    for (const route of routes) wanted.set(route.dir, new Set(route.hostnames));

    const present = new Map<string, Set<string>>();
    const strays: string[] = [];
    for (const entry of await readdir(generation, { withFileTypes: true })) {
      if (!entry.isDirectory()) strays.push(entry.name);
      else present.set(entry.name, new Set(await readdir(path.join(generation, entry.name))));
    }

    let added = 0;
    for (const [dir, hostnames] of wanted) {
      const have = present.get(dir);
      if (!have) await mkdir(path.join(generation, dir), { mode: 0o755 });
      const missing = [...hostnames].filter((hostname) => !have?.has(hostname));
      await inParallel(missing, (hostname) => writeFile(path.join(generation, dir, hostname), '', { mode: 0o644 }));
      added += missing.length;
    }

    let removed = 0;
    // Services' directories before `_all`; directories of routes that are gone, whole, after that.
    const order = [...present.keys()].sort((a, b) => Number(a === ALL_HOSTNAMES_DIR) - Number(b === ALL_HOSTNAMES_DIR));
    for (const dir of order) {
      const keep = wanted.get(dir);
      const extra = [...present.get(dir)!].filter((hostname) => !keep?.has(hostname));
      await inParallel(extra, (hostname) => rm(path.join(generation, dir, hostname), { recursive: true, force: true }));
      removed += extra.length;
    }
    for (const dir of order) if (!wanted.has(dir)) await rm(path.join(generation, dir), { recursive: true, force: true });
    for (const name of strays) await rm(path.join(generation, name), { force: true });
    return { added, removed };
  }

  /** Removes every generation but `keep`, and what an interrupted stamp write left. */
  async prune(keep: string): Promise<void> {
    for (const entry of await readdir(this.root, { withFileTypes: true })) {
      const stale =
        (entry.isDirectory() && GENERATION.test(entry.name) && entry.name !== keep) ||
        (entry.isFile() && entry.name.startsWith(`${STAMP}.`) && entry.name.endsWith('.tmp'));
      if (stale) await rm(path.join(this.root, entry.name), { recursive: true, force: true });
    }
  }
}

async function inParallel<T>(items: T[], work: (item: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += PARALLEL) await Promise.all(items.slice(i, i + PARALLEL).map(work));
}
