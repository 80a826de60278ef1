import { mkdir, readdir, readFile, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ALL_HOSTNAMES_DIR, REPLICAS_DIR, UPSTREAMS_DIR, type RouteFiles } from './caddy-config.js';

/** Which table the directory (and the configuration Caddy was given with it) was last brought to. */
export interface RoutesStamp {
  version: string;
  digest: string;
}

const STAMP = 'table.json';
const GENERATION = /^[0-9a-f]{16}$/;
const PARALLEL = 32;

/**
 * The hostnames Caddy routes, as files (see RouteFiles): `<root>/<digest>/_all/<hostname>`,
 * `<root>/<digest>/_waiting/<hostname>` and `<root>/<digest>/_upstream/<hostname>/<ip:port>`, all
 * empty. A configuration reads the generation named by its digest only, so a new configuration gets a
 * directory of its own, filled before it is loaded, and the one still serving is never touched by a
 * load that Caddy may refuse. The platform is the only writer: it brings the directory to the table
 * at every apply, whatever an earlier process left. The root itself is never removed (Caddy's
 * container has it bind-mounted).
 */
export class RoutesDirectory {
  constructor(readonly root: string) {}

  async ensureRoot(): Promise<void> {
    await mkdir(this.root, { recursive: true, mode: 0o755 });
  }

  /** Whether the generation exists (filled for a load, or served). */
  async has(digest: string): Promise<boolean> {
    if (!GENERATION.test(digest)) return false;
    return stat(path.join(this.root, digest)).then(
      (info) => info.isDirectory(),
      () => false,
    );
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
   * Brings `<root>/<digest>` to hold exactly the table's files. Every file to create is created
   * before any is removed (creating and unlinking a file are each atomic), the flat `_all` first: a
   * hostname that moves to another upstream (a cutover) or from waiting to served has its new file
   * before it loses the old one, so it is never routed nowhere, and never refused a certificate while routed.
   */
  async sync(digest: string, files: RouteFiles[]): Promise<{ added: number; removed: number }> {
    if (!GENERATION.test(digest)) throw new Error(`not a routes generation: ${JSON.stringify(digest)}`);
    const generation = path.join(this.root, digest);
    await mkdir(path.join(generation, UPSTREAMS_DIR), { recursive: true, mode: 0o755 });
    await mkdir(path.join(generation, REPLICAS_DIR), { recursive: true, mode: 0o755 });
    const wanted = new Map<string, Set<string>>();
    for (const { dir, names } of files) wanted.set(dir, new Set([...(wanted.get(dir) ?? []), ...names]));
    const present = await this.read(generation);

    let added = 0;
    const creating = [...wanted].sort(([a], [b]) => Number(b === ALL_HOSTNAMES_DIR) - Number(a === ALL_HOSTNAMES_DIR));
    await inParallel(
      creating.filter(([dir]) => !present.dirs.has(dir)),
      ([dir]) => mkdir(path.join(generation, dir), { mode: 0o755 }),
    );
    for (const [dir, names] of creating) {
      const have = present.dirs.get(dir);
      const missing = [...names].filter((name) => !have?.has(name));
      await inParallel(missing, (name) => writeFile(path.join(generation, dir, name), '', { mode: 0o644 }));
      added += missing.length;
    }

    let removed = 0;
    // Other directories before `_all`; directories that are not wanted, whole, after that.
    const order = [...present.dirs.keys()].sort((a, b) => Number(a === ALL_HOSTNAMES_DIR) - Number(b === ALL_HOSTNAMES_DIR));
    for (const dir of order) {
      const keep = wanted.get(dir);
      const extra = [...present.dirs.get(dir)!].filter((name) => !keep?.has(name));
      await inParallel(extra, (name) => rm(path.join(generation, dir, name), { recursive: true, force: true }));
      removed += extra.length;
    }
    await inParallel(
      order.filter((dir) => !wanted.has(dir)),
      (dir) => rm(path.join(generation, dir), { recursive: true, force: true }),
    );
    await inParallel(present.strays, (name) => rm(path.join(generation, name), { recursive: true, force: true }));
    return { added, removed };
  }

  /** What a generation holds: directories (`_upstream/<hostname>` and `_replicas/<hostname>` ones included) with their entries, and anything else. */
  private async read(generation: string): Promise<{ dirs: Map<string, Set<string>>; strays: string[] }> {
    const dirs = new Map<string, Set<string>>();
    const strays: string[] = [];
    const list = (dir: string) => readdir(path.join(generation, dir), { withFileTypes: true });
    for (const entry of await list('')) {
      if (!entry.isDirectory()) strays.push(entry.name);
      else if (entry.name !== UPSTREAMS_DIR && entry.name !== REPLICAS_DIR)
        dirs.set(entry.name, new Set(await readdir(path.join(generation, entry.name))));
    }
    for (const parent of [UPSTREAMS_DIR, REPLICAS_DIR]) {
      const hostnames = await list(parent);
      for (const entry of hostnames) if (!entry.isDirectory()) strays.push(path.join(parent, entry.name));
      const subdirs = hostnames.filter((entry) => entry.isDirectory()).map((entry) => path.join(parent, entry.name));
      await inParallel(subdirs, async (dir) => void dirs.set(dir, new Set(await readdir(path.join(generation, dir)))));
    }
    return { dirs, strays };
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
