import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GitCliSource } from '../../adapters/git/git-cli.git-source.js';
import { startGitServer, type GitServer } from '../helpers/git-server.js';

const exec = promisify(execFile);

/** The git CLI adapter against a real git smart-HTTP server: exact commits, ls-remote, tokens kept out of logs. */
describe('GitCliSource', () => {
  let server: GitServer;
  let scratch: string;
  const git = new GitCliSource();
  beforeAll(async () => {
    server = await startGitServer();
    scratch = await mkdtemp(path.join(tmpdir(), 'slipway-git-cli-'));
  });
  afterAll(async () => {
    await server.close();
    await rm(scratch, { recursive: true, force: true });
  });

  const clone = async (url: string, branch: string, commit?: { sha: string; ref: string | null }, token: string | null = null) => {
    const dest = await mkdtemp(path.join(scratch, 'c-'));
    const lines: string[] = [];
    const result = await git.clone({ url, branch, token, dest, signal: AbortSignal.timeout(60_000), onLine: (l) => lines.push(l), commit });
    return { ...result, dest, lines };
  };

  it('builds exactly the pushed commit, not the branch head that moved on since', async () => {
    const { cloneUrl, commitSha: first } = await server.addRepo('exact', { 'v.txt': 'one' });
    const { commitSha: second } = await server.pushCommit('exact', { 'v.txt': 'two' });
    const result = await clone(cloneUrl, 'main', { sha: first, ref: null });
    expect(result.commitSha).toBe(first);
    expect(await readFile(path.join(result.dest, 'v.txt'), 'utf8')).toBe('one');
    expect((await exec('git', ['-C', result.dest, 'rev-parse', 'HEAD'])).stdout.trim()).toBe(first);
    expect(result.lines.join('\n')).toContain(`Branch main is at ${second}, not ${first}`);
    // Without a commit, the branch head.
    expect((await clone(cloneUrl, 'main')).commitSha).toBe(second);
  });

  it('takes the branch clone when the branch still points at the pushed commit, and fetches by hash when the branch is gone', async () => {
    const { cloneUrl, commitSha } = await server.addRepo('unmoved', { 'u.txt': 'u' });
    const result = await clone(cloneUrl, 'main', { sha: commitSha, ref: null });
    expect(result.commitSha).toBe(commitSha);
    expect(await readFile(path.join(result.dest, 'u.txt'), 'utf8')).toBe('u');
    expect(result.lines.join('\n')).not.toContain('fetching');
    // The branch's clone, as a manual deployment makes it: the branch is checked out, not a detached fetch.
    expect((await exec('git', ['-C', result.dest, 'rev-parse', '--abbrev-ref', 'HEAD'])).stdout.trim()).toBe('main');
    const gone = await clone(cloneUrl, 'deleted-branch', { sha: commitSha, ref: null });
    expect(gone.commitSha).toBe(commitSha);
    expect(await readFile(path.join(gone.dest, 'u.txt'), 'utf8')).toBe('u');
  });

  it('resolves an abbreviated hash from the ref, and refuses a commit the remote does not have', async () => {
    const { cloneUrl } = await server.addRepo('short', { 'a.txt': 'a' });
    const { commitSha } = await server.pushCommit('short', { 'a.txt': 'b' }, { branch: 'feature' });
    const result = await clone(cloneUrl, 'main', { sha: commitSha.slice(0, 12), ref: 'refs/heads/feature' });
    expect(result.commitSha).toBe(commitSha);
    await expect(clone(cloneUrl, 'main', { sha: 'f'.repeat(40), ref: null })).rejects.toThrow(/not on the remote any more/);
  });

  it('ls-remote: the branch head, null for no such branch, a token kept out of errors', async () => {
    const { cloneUrl, commitSha } = await server.addRepo('remote', { 'r.txt': 'r' }, { token: 'secret-token-123' });
    expect(await git.headOf({ url: cloneUrl, branch: 'main', token: 'secret-token-123', signal: AbortSignal.timeout(30_000) })).toBe(
      commitSha,
    );
    expect(await git.headOf({ url: cloneUrl, branch: 'nope', token: 'secret-token-123', signal: AbortSignal.timeout(30_000) })).toBeNull();
    const error = await git.headOf({ url: cloneUrl, branch: 'main', token: 'wrong-token-456', signal: AbortSignal.timeout(30_000) }).then(
      () => null,
      (e: Error) => e,
    );
    expect(error?.message).toMatch(/git ls-remote failed/);
    expect(error?.message).not.toContain('wrong-token-456');
    const exact = await clone(cloneUrl, 'main', { sha: commitSha, ref: null }, 'secret-token-123');
    expect(exact.commitSha).toBe(commitSha);
    expect(exact.lines.join('\n')).not.toContain('secret-token-123');
  });
});
