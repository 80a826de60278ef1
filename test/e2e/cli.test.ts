import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { base32Decode, hotp, totpStep } from '../../src/accounts/totp.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/** `npm run cli -- keys ...` on the host, against the database a running server uses. */
const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
let server: ServerProcess;

beforeAll(async () => {
  server = await startServerProcess();
});
afterAll(async () => {
  await server?.dispose();
});

async function cli(...args: string[]) {
  return run('npm', ['run', '-s', 'cli', '--', ...args], { cwd: ROOT, env: { ...process.env, DATA_DIR: server.dataDir } });
}

it('creates a read key scoped to a project, lists it without its token, and deletes it', async () => {
  const project = (await api(server.url, server.token)('POST', '/api/projects', { name: 'cli' })).json.project;
  const created = await cli('keys', 'create', '--name', 'ci', '--access', 'read', '--project', project.id);
  const token = created.stdout.trim();
  expect(token).toMatch(/^slw_[A-Za-z0-9_-]{32}$/);
  expect(created.stderr).toContain(`projects ${project.id}`);

  const asKey = api(server.url, token);
  expect((await asKey('GET', '/api/projects')).json.projects.map((p: { id: string }) => p.id)).toEqual([project.id]);
  expect((await asKey('POST', '/api/projects', { name: 'nope' })).status).toBe(403);

  const listed = (await cli('keys', 'list')).stdout;
  expect(listed).toContain('ci');
  expect(listed).not.toContain(token);
  const id = listed
    .split('\n')
    .find((line) => line.includes('\tci\t'))!
    .split('\t')[0]!;
  await cli('keys', 'delete', id);
  // The server caches keys for at most 2 s: a key revoked from another process stops working within that.
  await new Promise((r) => setTimeout(r, 2100));
  expect((await asKey('GET', '/api/projects')).status).toBe(401);
});

it('explains its usage and refuses incomplete commands', async () => {
  await expect(cli('keys', 'create', '--name', 'x')).rejects.toMatchObject({ code: 2 });
  await expect(cli('nonsense')).rejects.toMatchObject({ code: 2 });
});

it('lists users and turns two-factor off for one who lost the authenticator', async () => {
  const anyone = api(server.url, undefined);
  const account = { email: 'lost@example.com', password: 'lost device password' };
  expect((await anyone('POST', '/api/auth/signup', { ...account, name: 'Lost' })).status).toBe(201);
  const session = (await anyone('POST', '/api/auth/signin', account)).json.session.token;
  const setup = (await api(server.url, session)('POST', '/api/auth/2fa/setup')).json;
  const code = hotp(base32Decode(setup.secret), totpStep(Date.now()));
  expect((await api(server.url, session)('POST', '/api/auth/2fa/verify', { code })).status).toBe(200);
  expect((await anyone('POST', '/api/auth/signin', account)).json.twoFactorRequired).toBe(true);

  expect((await cli('users', 'list')).stdout).toMatch(/\tlost@example\.com\towner\t2fa\tLost/);
  const reset = await cli('users', 'reset-2fa', 'LOST@example.com');
  expect(reset.stderr).toContain('two-factor authentication is off for lost@example.com');
  expect((await api(server.url, session)('GET', '/api/user')).status).toBe(401);
  expect((await anyone('POST', '/api/auth/signin', account)).json.session.token).toMatch(/^slw_ses_/);
  await expect(cli('users', 'reset-2fa', 'nobody@example.com')).rejects.toMatchObject({ code: 1 });
  await expect(cli('users', 'reset-2fa')).rejects.toMatchObject({ code: 2 });
});
