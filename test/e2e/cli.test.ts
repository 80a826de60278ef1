import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
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
