import { spawn } from 'node:child_process';
import type { LogStream } from '../../src/domain/types.js';
import type { CloneRequest, GitSource } from '../../src/deployments/git-source.port.js';

const CLONE_TIMEOUT_MS = 10 * 60_000;

/**
 * Clones with the git CLI, argv only. A token travels as an HTTP header through git's
 * GIT_CONFIG_* environment, so it is in no process argument, no URL and no log line.
 */
export class GitCliSource implements GitSource {
  async clone(request: CloneRequest): Promise<{ commitSha: string }> {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      GIT_TERMINAL_PROMPT: '0',
      GIT_ASKPASS: '/bin/false',
      GIT_SSH_COMMAND: 'ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new',
    };
    if (request.token) {
      // `user:token` (from a repository URL's credential) is sent as is; a lone token with GitHub's user name.
      const credentials = request.token.includes(':') ? request.token : `x-access-token:${request.token}`;
      const basic = Buffer.from(credentials).toString('base64');
      env.GIT_CONFIG_COUNT = '1';
      env.GIT_CONFIG_KEY_0 = 'http.extraHeader';
      env.GIT_CONFIG_VALUE_0 = `Authorization: Basic ${basic}`;
    }
    const secrets = request.token ? [request.token, request.token.slice(request.token.indexOf(':') + 1)].filter((s) => s.length >= 4) : [];
    const mask = (line: string) => secrets.reduce((masked, secret) => masked.split(secret).join('***'), line);
    await run(
      ['clone', '--depth', '1', '--single-branch', '--branch', request.branch, '--no-tags', '--', request.url, request.dest],
      env,
      request.signal,
      (line, stream) => request.onLine(mask(line), stream),
    );
    const sha = await run(['-C', request.dest, 'rev-parse', 'HEAD'], env, request.signal, () => {});
    return { commitSha: sha.trim() };
  }
}

function run(
  args: string[],
  env: NodeJS.ProcessEnv,
  signal: AbortSignal,
  onLine: (line: string, stream: LogStream) => void,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      signal: AbortSignal.any([signal, AbortSignal.timeout(CLONE_TIMEOUT_MS)]),
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
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', lines('stderr'));
    child.on('error', (error) => reject(signal.aborted ? new Error('aborted') : error));
    child.on('close', (code) => {
      if (code === 0) resolve(stdout);
      else
        reject(new Error(signal.aborted ? 'aborted' : `git ${args[0] === '-C' ? args[2] : args[0]} failed (exit ${code}): ${lastError}`));
    });
  });
}
