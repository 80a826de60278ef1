import { spawn, execFile } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import type { AddressInfo } from 'node:net';

const execFileAsync = promisify(execFile);

/** File contents by repository path; `null` (in a later commit) deletes the file. */
export type RepoFiles = Record<string, string | Buffer>;
export type RepoChanges = Record<string, string | Buffer | null>;

export interface AddRepoOptions {
  /** The branch the files are committed to, and the bare repository's HEAD. Default `main`. */
  branch?: string;
  /** Further commits on top of the first one, oldest first; `commitSha` is the last one's. */
  commits?: Array<{ message?: string; files: RepoChanges }>;
  /** Message of the first commit. */
  message?: string;
  /** Makes the repository private: HTTP basic auth with this password (any user name). */
  token?: string;
}

export interface PushOptions {
  branch?: string;
  message?: string;
}

export interface GitRequest {
  method: string;
  /** Decoded path, e.g. `/web.git/info/refs`. */
  path: string;
  query: string;
  status: number;
  /** The basic-auth user name of an authorised request to a token repository. */
  user?: string;
  contentEncoding?: string;
  /** The `Git-Protocol` header (`version=2` for protocol v2). */
  gitProtocol?: string;
}

export interface GitServer {
  /** `http://127.0.0.1:<port>`; a repository's clone URL is `${url}/${name}.git`. */
  url: string;
  /** Every request answered so far, oldest first (to assert how a repository was fetched). */
  requests: GitRequest[];
  /**
   * Creates a bare repository from `files` (one commit on `branch`, then `opts.commits`). Called
   * again with an existing name, it publishes a new version instead: one new commit on `branch`
   * (default: the repository's default branch) whose tree is exactly `files`, then `opts.commits`;
   * a given `token` replaces the repository's token.
   */
  addRepo(name: string, files: RepoFiles, opts?: AddRepoOptions): Promise<{ cloneUrl: string; commitSha: string }>;
  /** Commits changes on top of `branch` (default: the repository's default branch; created from it when new) and pushes. */
  pushCommit(name: string, changes: RepoChanges, opts?: PushOptions): Promise<{ commitSha: string }>;
  /** The clone URL with basic-auth credentials for a token repository. */
  authUrl(name: string, token: string, user?: string): string;
  close(): Promise<void>;
}

/** Fixed test identity: commits never depend on the machine's git configuration. */
const GIT_ENV: NodeJS.ProcessEnv = {
  GIT_AUTHOR_NAME: 'Slipway Test',
  GIT_AUTHOR_EMAIL: 'test@slipway.invalid',
  GIT_COMMITTER_NAME: 'Slipway Test',
  GIT_COMMITTER_EMAIL: 'test@slipway.invalid',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_TERMINAL_PROMPT: '0',
};

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/;
const BRANCH_RE = /^[A-Za-z0-9][A-Za-z0-9._/-]*$/;

interface Repo {
  name: string;
  bareDir: string;
  workDir: string;
  defaultBranch: string;
  token?: string;
}

async function git(cwd: string, args: string[]): Promise<string> {
  try {
    const { stdout } = await execFileAsync('git', args, { cwd, env: { ...process.env, ...GIT_ENV }, maxBuffer: 64 * 1024 * 1024 });
    return stdout.trim();
  } catch (err) {
    const e = err as Error & { stderr?: string };
    throw new Error(`git ${args.join(' ')} failed in ${cwd}: ${e.stderr?.trim() || e.message}`);
  }
}

async function writeChanges(workDir: string, changes: RepoChanges): Promise<void> {
  for (const [rel, content] of Object.entries(changes)) {
    const normal = path.posix.normalize(rel);
    if (normal.startsWith('../') || normal === '..' || path.isAbsolute(normal) || normal === '.git' || normal.startsWith('.git/')) {
      throw new Error(`git-server: bad file path ${JSON.stringify(rel)}`);
    }
    const file = path.join(workDir, normal);
    if (content === null) {
      await rm(file, { force: true });
      continue;
    }
    await mkdir(path.dirname(file), { recursive: true });
    await rm(file, { recursive: true, force: true }); // a directory of an older version may stand there
    await writeFile(file, content);
  }
}

async function commitAll(workDir: string, message: string): Promise<string> {
  await git(workDir, ['add', '-A']);
  await git(workDir, ['-c', 'commit.gpgsign=false', 'commit', '--allow-empty', '-q', '-m', message]);
  return git(workDir, ['rev-parse', 'HEAD']);
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** User and password of a Basic Authorization header; null when there is none or it is malformed. */
function basicCredentials(header: string | undefined): { user: string; password: string } | null {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!m?.[1]) return null;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? null : { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * A Git smart-HTTP server on 127.0.0.1 (random port): node:http in front of `git http-backend`
 * run as a CGI. Repositories are bare repositories under a temp dir, made from file maps.
 * Shallow clones and partial-clone filters work; `token` repositories need HTTP basic auth.
 */
export async function startGitServer(): Promise<GitServer> {
  const root = await mkdtemp(path.join(tmpdir(), 'slipway-git-'));
  const projectRoot = path.join(root, 'repos');
  const workRoot = path.join(root, 'work');
  await mkdir(projectRoot, { recursive: true });
  await mkdir(workRoot, { recursive: true });
  const repos = new Map<string, Repo>();
  const children = new Set<ReturnType<typeof spawn>>();
  const requests: GitRequest[] = [];

  function findRepo(pathname: string): { repo: Repo; rest: string } | undefined {
    // Longest name first, so `a/b` wins over `a` for `/a/b.git/...`.
    for (const repo of [...repos.values()].sort((x, y) => y.name.length - x.name.length)) {
      const prefix = `/${repo.name}.git`;
      if (pathname === prefix || pathname.startsWith(`${prefix}/`)) return { repo, rest: pathname.slice(prefix.length) };
    }
    return undefined;
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const entry: GitRequest = { method: req.method ?? 'GET', path: url.pathname, query: url.search.slice(1), status: 0 };
    if (typeof req.headers['content-encoding'] === 'string') entry.contentEncoding = req.headers['content-encoding'];
    if (typeof req.headers['git-protocol'] === 'string') entry.gitProtocol = req.headers['git-protocol'];
    requests.push(entry);
    res.on('finish', () => {
      entry.status = res.statusCode;
    });
    let pathname: string;
    try {
      pathname = decodeURIComponent(url.pathname);
    } catch {
      res.writeHead(400).end('bad path\n');
      return;
    }
    entry.path = pathname;
    const found = pathname.includes('/../') || pathname.includes('\0') ? undefined : findRepo(pathname);
    if (!found) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('repository not found\n');
      req.resume();
      return;
    }
    const { repo } = found;
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: root,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_PROJECT_ROOT: projectRoot,
      GIT_HTTP_EXPORT_ALL: '1',
      GATEWAY_INTERFACE: 'CGI/1.1',
      SERVER_PROTOCOL: `HTTP/${req.httpVersion}`,
      SERVER_SOFTWARE: 'slipway-test-git-server',
      PATH_INFO: pathname,
      REQUEST_METHOD: req.method ?? 'GET',
      QUERY_STRING: url.search.slice(1),
      REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
    };
    if (req.headers['content-type']) env.CONTENT_TYPE = req.headers['content-type'];
    if (req.headers['content-length']) env.CONTENT_LENGTH = req.headers['content-length'];
    if (req.headers['content-encoding']) env.HTTP_CONTENT_ENCODING = req.headers['content-encoding'];
    const protocol = req.headers['git-protocol'];
    if (typeof protocol === 'string') env.GIT_PROTOCOL = protocol;

    if (repo.token !== undefined) {
      const credentials = basicCredentials(req.headers.authorization);
      if (!credentials || !safeEqual(credentials.password, repo.token)) {
        res
          .writeHead(401, { 'WWW-Authenticate': 'Basic realm="slipway-test"', 'Content-Type': 'text/plain' })
          .end('authentication required\n');
        req.resume();
        return;
      }
      env.REMOTE_USER = credentials.user || 'token';
      entry.user = env.REMOTE_USER;
      env.AUTH_TYPE = 'Basic';
    }

    const child = spawn('git', ['http-backend'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    children.add(child);
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    req.pipe(child.stdin);
    child.stdin.on('error', () => {}); // the backend may stop reading early
    req.on('error', () => child.kill());
    res.on('close', () => {
      if (child.exitCode === null) child.kill();
    });

    // CGI response: header lines, a blank line, then the body.
    let head = Buffer.alloc(0);
    let headersDone = false;
    child.stdout.on('data', (chunk: Buffer) => {
      if (headersDone) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const crlf = head.indexOf('\r\n\r\n');
      const lf = head.indexOf('\n\n');
      const end = crlf >= 0 && (lf < 0 || crlf < lf) ? crlf : lf;
      if (end < 0) return;
      const sepLen = end === crlf ? 4 : 2;
      headersDone = true;
      let status = 200;
      let statusText: string | undefined;
      const headers: Record<string, string | string[]> = {};
      for (const line of head.subarray(0, end).toString('latin1').split(/\r?\n/)) {
        const colon = line.indexOf(':');
        if (colon <= 0) continue;
        const key = line.slice(0, colon).trim();
        const value = line.slice(colon + 1).trim();
        if (key.toLowerCase() === 'status') {
          const m = /^(\d{3})\s*(.*)$/.exec(value);
          if (m?.[1]) {
            status = Number(m[1]);
            statusText = m[2] || undefined;
          }
          continue;
        }
        const prev = headers[key];
        headers[key] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
      }
      if (statusText) res.writeHead(status, statusText, headers);
      else res.writeHead(status, headers);
      const body = head.subarray(end + sepLen);
      if (body.length) res.write(body);
    });
    child.on('close', (code) => {
      children.delete(child);
      if (!headersDone) {
        if (!res.headersSent) res.writeHead(502, { 'Content-Type': 'text/plain' });
        res.end(`git http-backend failed (exit ${code}): ${stderr}\n`);
        return;
      }
      res.end();
    });
    child.on('error', (err) => {
      children.delete(child);
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain' });
      res.end(`cannot run git http-backend: ${err.message}\n`);
    });
  }

  const server = createServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;

  /** Checks `branch` out in the repository's work tree, creating it from the current HEAD when new. */
  async function checkoutBranch(repo: Repo, branch: string): Promise<void> {
    if (!BRANCH_RE.test(branch)) throw new Error(`git-server: bad branch name ${JSON.stringify(branch)}`);
    const exists = (await git(repo.workDir, ['branch', '--list', branch])) !== '';
    await git(repo.workDir, exists ? ['checkout', '-q', branch] : ['checkout', '-q', '-b', branch]);
  }

  // Repository changes run one at a time: they share work trees, and git's index lock.
  let queue: Promise<unknown> = Promise.resolve();
  function serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = queue.then(fn, fn);
    queue = next.catch(() => {});
    return next;
  }

  async function pushCommit(name: string, changes: RepoChanges, opts: PushOptions = {}): Promise<{ commitSha: string }> {
    const repo = repos.get(name);
    if (!repo) throw new Error(`git-server: no repository ${name}`);
    const branch = opts.branch ?? repo.defaultBranch;
    await checkoutBranch(repo, branch);
    await writeChanges(repo.workDir, changes);
    const commitSha = await commitAll(repo.workDir, opts.message ?? `Update ${branch}`);
    await git(repo.workDir, ['push', '-q', repo.bareDir, `HEAD:refs/heads/${branch}`]);
    return { commitSha };
  }

  return {
    url: base,
    requests,

    addRepo: (name, files, opts = {}) => serial(() => addRepo(name, files, opts)),

    pushCommit: (name, changes, opts) => serial(() => pushCommit(name, changes, opts)),

    authUrl(name, token, user = 'x') {
      return `http://${encodeURIComponent(user)}:${encodeURIComponent(token)}@127.0.0.1:${port}/${name}.git`;
    },

    async close() {
      for (const child of children) child.kill();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await queue;
      await rm(root, { recursive: true, force: true });
    },
  };

  async function addRepo(name: string, files: RepoFiles, opts: AddRepoOptions): Promise<{ cloneUrl: string; commitSha: string }> {
    if (!NAME_RE.test(name) || name.split('/').some((s) => s === '.' || s === '..' || s.endsWith('.git'))) {
      throw new Error(`git-server: bad repository name ${JSON.stringify(name)}`);
    }
    const existing = repos.get(name);
    if (existing) {
      // A new version: the branch's tree becomes exactly `files`.
      const branch = opts.branch ?? existing.defaultBranch;
      if (opts.token !== undefined) existing.token = opts.token;
      await checkoutBranch(existing, branch);
      const tracked = (await git(existing.workDir, ['ls-files', '-z'])).split('\0').filter(Boolean);
      const changes: RepoChanges = { ...Object.fromEntries(tracked.map((f) => [f, null])), ...files };
      let { commitSha } = await pushCommit(name, changes, { branch, message: opts.message ?? 'New version' });
      for (const c of opts.commits ?? []) {
        commitSha = (await pushCommit(name, c.files, { branch, ...(c.message !== undefined ? { message: c.message } : {}) })).commitSha;
      }
      return { cloneUrl: `${base}/${name}.git`, commitSha };
    }
    const branch = opts.branch ?? 'main';
    if (!BRANCH_RE.test(branch)) throw new Error(`git-server: bad branch name ${JSON.stringify(branch)}`);
    const bareDir = path.join(projectRoot, `${name}.git`);
    const workDir = path.join(workRoot, name);
    await mkdir(workDir, { recursive: true });
    await git(workDir, ['init', '-q', '-b', branch]);
    await writeChanges(workDir, files);
    let commitSha = await commitAll(workDir, opts.message ?? 'Initial commit');

    await mkdir(bareDir, { recursive: true });
    await git(bareDir, ['init', '-q', '--bare', '-b', branch]);
    for (const [key, value] of [
      ['uploadpack.allowFilter', 'true'],
      ['uploadpack.allowReachableSHA1InWant', 'true'],
      ['uploadpack.allowAnySHA1InWant', 'true'],
      ['http.uploadpack', 'true'],
      ['http.receivepack', 'false'],
    ] as const) {
      await git(bareDir, ['config', key, value]);
    }
    await git(workDir, ['push', '-q', bareDir, `HEAD:refs/heads/${branch}`]);
    await git(bareDir, ['symbolic-ref', 'HEAD', `refs/heads/${branch}`]);

    const repo: Repo = { name, bareDir, workDir, defaultBranch: branch };
    if (opts.token !== undefined) repo.token = opts.token;
    repos.set(name, repo);
    for (const c of opts.commits ?? []) {
      const opts2: PushOptions = { branch };
      if (c.message !== undefined) opts2.message = c.message;
      commitSha = (await pushCommit(name, c.files, opts2)).commitSha;
    }
    return { cloneUrl: `${base}/${name}.git`, commitSha };
  }
}
