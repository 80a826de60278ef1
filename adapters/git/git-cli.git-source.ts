import { callSignal } from '../../src/platform/call-signal.js';
import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import type { LogStream } from '../../src/domain/types.js';
import type { CloneRequest, GitSource } from '../../src/deployments/git-source.port.js';
import type { GitRemote } from '../../src/git-hooks/git-provider.port.js';

const CLONE_TIMEOUT_MS = 10 * 60_000;
const LS_REMOTE_TIMEOUT_MS = 30_000;
const FULL_SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/**
 * Clones with the git CLI, argv only. A token travels as an HTTP header through git's
 * GIT_CONFIG_* environment, so it is in no process argument, no URL and no log line.
 */
export class GitCliSource implements GitSource, GitRemote {
  async clone(request: CloneRequest): Promise<{ commitSha: string }> {
    const env = gitEnv(request.token);
    const secrets = request.token ? [request.token, request.token.slice(request.token.indexOf(':') + 1)].filter((s) => s.length >= 4) : [];
    const mask = (line: string) => secrets.reduce((masked, secret) => masked.split(secret).join('***'), line);
    const onLine = (line: string, stream: LogStream) => request.onLine(mask(line), stream);
    if (request.commit) return this.fetchCommit(request, request.commit, env, onLine);
    return { commitSha: await this.cloneBranch(request, env, onLine) };
  }

  /** `git clone --depth 1 --single-branch` then `rev-parse HEAD`: two processes; resolves with the head it checked out. */
  private async cloneBranch(
    request: CloneRequest,
    env: NodeJS.ProcessEnv,
    onLine: (line: string, stream: LogStream) => void,
  ): Promise<string> {
    await run(
      ['clone', '--depth', '1', '--single-branch', '--branch', request.branch, '--no-tags', '--', request.url, request.dest],
      env,
      request.signal,
      onLine,
    );
    const sha = await run(['-C', request.dest, 'rev-parse', 'HEAD'], env, request.signal, () => {});
    return sha.trim().toLowerCase();
  }

  /**
   * Exactly the pushed commit: `git fetch --depth 1 origin <sha>` (GitHub, GitLab, Gitea and git's own
   * http-backend with uploadpack.allowReachableSHA1InWant serve a reachable commit by its hash); where
   * the server refuses that, or the hash is abbreviated, the ref (or branch) is fetched and the commit
   * looked up in what came. Never the branch's head in its place.
   */
  private async fetchCommit(
    request: CloneRequest,
    commit: { sha: string; ref: string | null },
    env: NodeJS.ProcessEnv,
    onLine: (line: string, stream: LogStream) => void,
  ): Promise<{ commitSha: string }> {
    const sha = commit.sha.toLowerCase();
    const git = (args: string[], lines = onLine) => run(['-C', request.dest, ...args], env, request.signal, lines);
    // The common case, a push or a poll of a branch that has not moved since: the branch's clone, the same two
    // processes as a manual deployment, is exactly the commit. Its head is compared with the named one, so a
    // branch that moved on (or an abbreviation that is not its head) falls through to the fetch by hash below,
    // in the same repository; a clone that fails (a deleted branch) falls through to a fresh one.
    let cloned = false;
    if (commit.ref === null && sha.length >= 7) {
      const head = await this.cloneBranch(request, env, onLine).then(
        (head) => head,
        async (error: Error) => {
          if (request.signal.aborted) throw error;
          await rm(request.dest, { recursive: true, force: true });
          return null;
        },
      );
      if (head?.startsWith(sha)) return { commitSha: head };
      if (head !== null) {
        onLine(`Branch ${request.branch} is at ${head}, not ${sha}; fetching ${sha} by its hash`, 'stdout');
        cloned = true;
      }
    }
    if (!cloned) {
      await run(['init', '-q', request.dest], env, request.signal, onLine);
      await git(['remote', 'add', 'origin', request.url]);
    }
    let fetched = false;
    if (FULL_SHA.test(sha)) {
      fetched = await git(['fetch', '--depth', '1', '--no-tags', 'origin', sha]).then(
        () => true,
        (error: Error) => {
          if (request.signal.aborted) throw error;
          onLine(`The server does not hand out ${sha} by its hash; fetching ${commit.ref ?? request.branch} instead`, 'stdout');
          return false;
        },
      );
    }
    if (!fetched) {
      const ref = commit.ref ?? `refs/heads/${request.branch}`;
      // After a shallow clone, the commit behind its head is only reachable once the history is deepened.
      await git(['fetch', ...(cloned ? ['--unshallow'] : []), '--no-tags', 'origin', `+${ref}:refs/remotes/origin/slipway-fetched`]);
    }
    let resolved: string;
    try {
      resolved = (await git(['rev-parse', '--verify', '--quiet', `${sha}^{commit}`], () => {})).trim();
    } catch {
      throw new Error(`The commit ${sha} is not on the remote any more (a force push or a deleted branch?): nothing was built`);
    }
    await git(['-c', 'advice.detachedHead=false', 'checkout', '-q', '--detach', resolved]);
    return { commitSha: resolved };
  }

  /** `git ls-remote --heads -- <url> refs/heads/<branch>`: the branch's commit, or null when there is no such branch. */
  async headOf(request: { url: string; branch: string; token: string | null; signal: AbortSignal }): Promise<string | null> {
    const out = await run(
      ['ls-remote', '--heads', '--', request.url, `refs/heads/${request.branch}`],
      gitEnv(request.token),
      request.signal,
      () => {},
      LS_REMOTE_TIMEOUT_MS,
    );
    for (const line of out.split('\n')) {
      const [sha, ref] = line.trim().split(/\s+/);
      if (sha && ref === `refs/heads/${request.branch}` && /^[0-9a-f]{40,64}$/.test(sha)) return sha;
    }
    return null;
  }
}

function gitEnv(token: string | null): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '/bin/false',
    GIT_SSH_COMMAND: 'ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new',
  };
  if (token) {
    // `user:token` (from a repository URL's credential) is sent as is; a lone token with GitHub's user name.
    const credentials = token.includes(':') ? token : `x-access-token:${token}`;
    const basic = Buffer.from(credentials).toString('base64');
    env.GIT_CONFIG_COUNT = '1';
    env.GIT_CONFIG_KEY_0 = 'http.extraHeader';
    env.GIT_CONFIG_VALUE_0 = `Authorization: Basic ${basic}`;
  }
  return env;
}

function run(
  args: string[],
  env: NodeJS.ProcessEnv,
  signal: AbortSignal,
  onLine: (line: string, stream: LogStream) => void,
  timeoutMs = CLONE_TIMEOUT_MS,
): Promise<string> {
  const call = callSignal(signal, timeoutMs);
  return new Promise<string>((resolve, reject) => {
    const timeout = call.signal;
    const child = spawn('git', args, {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      signal: call.signal,
    });
    let stdout = '';
    let lastError = '';
    const lines = (stream: LogStream) => {
      let pending = '';
      return (chunk: Buffer) => {
        const text = pending + chunk.toString('utf8');
        const parts = text.split(/\r?\n|\r/);
        pending = parts.pop() ?? '';
        for (const line of parts) {
          if (!line.trim()) continue;
          if (stream === 'stderr') lastError = line;
          onLine(line, stream);
        }
      };
    };
    const command = args[0] === '-C' ? args[2] : args[0];
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', lines('stderr'));
    child.on('error', (error) =>
      reject(
        signal.aborted
          ? new Error('aborted')
          : timeout.aborted
            ? new Error(`git ${command} did not finish within ${timeoutMs / 1000} s`)
            : error,
      ),
    );
    child.on('close', (code) => {
      if (code === 0) resolve(stdout);
      else reject(new Error(signal.aborted ? 'aborted' : `git ${command} failed (exit ${code}): ${lastError}`));
    });
  }).finally(() => call.release());
}
