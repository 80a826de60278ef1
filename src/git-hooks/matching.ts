import type { HookRepository } from './hook-event.js';

/**
 * Which services a delivery is for: the repository (by URL or by `owner/name`), the branch, and the
 * service's `watchPaths` against the changed files. Pure functions: the use case brings the services.
 */

/**
 * A repository URL as `host/path`, lower-case, without scheme, credentials, port, `.git` or a trailing
 * slash: `https://user:t@GitHub.com/Org/App.git`, `git@github.com:org/app.git` and
 * `ssh://git@github.com:22/org/app` are all `github.com/org/app`.
 */
export function repositoryKey(url: string): string | null {
  const trimmed = url.trim();
  let host: string;
  let path: string;
  const scp = /^(?:[^@/\s]+@)?([^:/\s]+):(?!\/\/)(.+)$/.exec(trimmed);
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed) && scp) {
    host = scp[1]!;
    path = scp[2]!;
  } else {
    try {
      const parsed = new URL(trimmed);
      host = parsed.hostname;
      path = decodeURIComponent(parsed.pathname);
    } catch {
      return null;
    }
  }
  const clean = path
    .replace(/^\/+|\/+$/g, '')
    .replace(/\.git$/i, '')
    .replace(/\/+$/g, '');
  if (!host || !clean) return null;
  return `${host.toLowerCase()}/${clean.toLowerCase()}`;
}

/** Every key a delivery's repository is known by: its URLs' keys and its `owner/name`. */
export function repositoryKeys(repository: HookRepository): { urls: Set<string>; fullName: string | null } {
  const urls = new Set<string>();
  for (const url of repository.urls) {
    const key = repositoryKey(url);
    if (key) urls.add(key);
  }
  return { urls, fullName: repository.fullName?.toLowerCase().replace(/\.git$/, '') ?? null };
}

/**
 * Whether a service built from `cloneUrl` (its repository's URL) and `repoFullName` is the delivery's
 * repository: the URLs' keys are equal, or (when the service names its repository by `owner/name`)
 * the paths are, whatever the host (a GitLab path with subgroups included).
 */
export function sameRepository(
  delivery: ReturnType<typeof repositoryKeys>,
  service: { cloneUrl: string; repoFullName: string | null },
): boolean {
  const key = repositoryKey(service.cloneUrl);
  if (key && delivery.urls.has(key)) return true;
  const fullName = service.repoFullName?.toLowerCase() ?? (key ? key.slice(key.indexOf('/') + 1) : null);
  return fullName !== null && delivery.fullName !== null && fullName === delivery.fullName;
}

/** The most patterns a service may watch, and their length: each is compiled to a regular expression. */
export const MAX_WATCH_PATHS = 50;
export const MAX_WATCH_PATH_LENGTH = 512;

/**
 * A glob as gitignore and the hosts' path filters read it, over paths from the repository's root:
 * `*` any characters but `/`, `**` any number of folders, `?` one character, `[abc]`, `{a,b}`; a pattern
 * without a `/` matches a file's name in any folder; a trailing `/` a folder and what it holds.
 */
export function globToRegExp(pattern: string): RegExp {
  let glob = pattern.trim().replace(/^\.\//, '');
  const anchored = glob.startsWith('/') || glob.replace(/\/$/, '').includes('/');
  glob = glob.replace(/^\/+/, '');
  if (glob.endsWith('/')) glob += '**';
  let out = '';
  let braces = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') {
      if (glob[i + 1] === '*') {
        const slashAfter = glob[i + 2] === '/';
        const atSegmentStart = i === 0 || glob[i - 1] === '/';
        i += slashAfter && atSegmentStart ? 2 : 1;
        out += slashAfter && atSegmentStart ? '(?:.*/)?' : '.*';
      } else out += '[^/]*';
    } else if (c === '?') out += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 1);
      if (end < 0) out += '\\[';
      else {
        const body = glob.slice(i + 1, end).replace(/\\/g, '\\\\');
        out += `[${body.startsWith('!') ? `^${body.slice(1)}` : body}]`;
        i = end;
      }
    } else if (c === '{') {
      braces++;
      out += '(?:';
    } else if (c === '}' && braces > 0) {
      braces--;
      out += ')';
    } else if (c === ',' && braces > 0) out += '|';
    else out += c.replace(/[.+^$()|\\/]/g, '\\$&');
  }
  out += ')'.repeat(braces);
  return new RegExp(anchored ? `^${out}$` : `^(?:.*/)?${out}$`);
}

/**
 * Whether a push touching `changedFiles` concerns a service watching `watchPaths`: no patterns means
 * every push does; `!pattern` takes paths back out; unknown files (a provider that does not list them)
 * count as a match, so a push is never missed.
 */
export function watchedChanges(
  watchPaths: readonly string[],
  changedFiles: readonly string[] | null,
): { matches: boolean; files: string[] } {
  if (watchPaths.length === 0 || changedFiles === null) return { matches: true, files: [] };
  const include = watchPaths.filter((p) => !p.startsWith('!')).map(globToRegExp);
  const exclude = watchPaths.filter((p) => p.startsWith('!')).map((p) => globToRegExp(p.slice(1)));
  const files = changedFiles.filter(
    (file) => (include.length === 0 || include.some((re) => re.test(file))) && !exclude.some((re) => re.test(file)),
  );
  return { matches: files.length > 0, files };
}
