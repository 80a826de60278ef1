import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { DomainError } from '../../domain/errors.js';

/**
 * What the analyzer may see of a service's source: paths are relative to the service root
 * and '/'-separated; '' and '.' name the root itself.
 */
export interface SourceTree {
  /** True when a file or a directory is there. */
  exists(path: string): Promise<boolean>;
  /** A file's text; null when there is no file there (nothing, or a directory). */
  read(path: string): Promise<string | null>;
  /** A directory's entries, sorted, directories ending in '/'; empty when there is no directory there. */
  list(dir: string): Promise<string[]>;
}

/** A path the tree refuses: it would leave the service root, or names a file too big to read. */
export class SourceTreeError extends DomainError {
  readonly code = 'validation_error' as const;
  constructor(filePath: string, problem: string) {
    super(`${JSON.stringify(filePath)} ${problem}`, { path: filePath });
  }
}

/** The analyzer reads manifests and a few source files; anything bigger is not one of those. */
export const MAX_READ_BYTES = 2 * 1024 * 1024;

/** Splits a service-relative path into its segments, refusing anything that could leave the root. */
export function pathSegments(filePath: string): string[] {
  // A backslash is a Windows separator here, never part of a name we would look up.
  if (filePath.includes('\0') || filePath.includes('\\'))
    throw new SourceTreeError(filePath, 'contains a NUL or a backslash; use / between folders');
  if (filePath.startsWith('/')) throw new SourceTreeError(filePath, 'is absolute; paths are relative to the service root');
  const segments = filePath.split('/').filter((segment) => segment !== '' && segment !== '.');
  if (segments.includes('..')) throw new SourceTreeError(filePath, 'leaves the service root (..)');
  return segments;
}

/** The canonical form of a service-relative path: 'a/./b/' becomes 'a/b', '.' becomes ''. */
export function normalizePath(filePath: string): string {
  return pathSegments(filePath).join('/');
}

/** A tree held in memory, for tests; directories are implied by the file paths. */
export function memoryTree(files: Record<string, string>): SourceTree {
  const contents = new Map<string, string>();
  for (const [filePath, text] of Object.entries(files)) {
    const key = normalizePath(filePath);
    if (key === '') throw new Error('memoryTree: a file needs a name');
    contents.set(key, text);
  }
  const isDirectory = (dir: string) => dir === '' || [...contents.keys()].some((key) => key.startsWith(`${dir}/`));

  return {
    async exists(filePath) {
      const key = normalizePath(filePath);
      return contents.has(key) || isDirectory(key);
    },
    async read(filePath) {
      return contents.get(normalizePath(filePath)) ?? null;
    },
    async list(dir) {
      const key = normalizePath(dir);
      const prefix = key === '' ? '' : `${key}/`;
      const names = new Set<string>();
      for (const filePath of contents.keys()) {
        if (!filePath.startsWith(prefix)) continue;
        const rest = filePath.slice(prefix.length);
        const slash = rest.indexOf('/');
        names.add(slash === -1 ? rest : rest.slice(0, slash + 1));
      }
      return [...names].sort();
    },
  };
}

const MISSING = new Set(['ENOENT', 'ENOTDIR', 'ELOOP']);

function isMissing(error: unknown): boolean {
  return typeof error === 'object' && error !== null && MISSING.has((error as NodeJS.ErrnoException).code ?? '');
}

/**
 * A checked-out repository on disk. Every path is resolved with realpath and must stay under the
 * root, so a symbolic link committed to the repository cannot make the analyzer read (and echo
 * into the build log) a file of the host. A link that resolves nowhere counts as absent.
 */
export function directoryTree(rootDir: string, options: { maxReadBytes?: number } = {}): SourceTree {
  const maxReadBytes = options.maxReadBytes ?? MAX_READ_BYTES;
  let realRoot: Promise<string> | undefined;
  const root = () => (realRoot ??= realpath(rootDir));

  const inside = (base: string, real: string) => real === base || real.startsWith(base.endsWith(path.sep) ? base : base + path.sep);

  /** Where `filePath` really is; null when nothing is there. */
  async function locate(filePath: string): Promise<string | null> {
    const segments = pathSegments(filePath);
    const base = await root();
    let real: string;
    try {
      real = await realpath(path.join(base, ...segments));
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
    if (!inside(base, real)) throw new SourceTreeError(filePath, 'is a symbolic link leading outside the service root');
    return real;
  }

  /** What a listed symbolic link stands for; links leading out of the root or nowhere are left out of listings. */
  async function linkKind(linkPath: string): Promise<'file' | 'dir' | null> {
    try {
      const real = await realpath(linkPath);
      if (!inside(await root(), real)) return null;
      const info = await stat(real);
      return info.isDirectory() ? 'dir' : info.isFile() ? 'file' : null;
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  return {
    async exists(filePath) {
      return (await locate(filePath)) !== null;
    },

    async read(filePath) {
      const real = await locate(filePath);
      if (real === null) return null;
      const info = await stat(real);
      if (!info.isFile()) return null;
      if (info.size > maxReadBytes)
        throw new SourceTreeError(filePath, `is larger than ${maxReadBytes} bytes; the analyzer does not read files that big`);
      return readFile(real, 'utf8');
    },

    async list(dir) {
      const real = await locate(dir);
      if (real === null) return [];
      let entries: import('node:fs').Dirent[];
      try {
        entries = await readdir(real, { withFileTypes: true });
      } catch (error) {
        if (isMissing(error)) return [];
        throw error;
      }
      const names: string[] = [];
      for (const entry of entries) {
        const kind = entry.isDirectory()
          ? 'dir'
          : entry.isFile()
            ? 'file'
            : entry.isSymbolicLink()
              ? await linkKind(path.join(real, entry.name))
              : null;
        if (kind === 'dir') names.push(`${entry.name}/`);
        else if (kind === 'file') names.push(entry.name);
      }
      return names.sort();
    },
  };
}
