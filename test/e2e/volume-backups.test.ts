import { randomBytes } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { deploy } from '../helpers/deployments.js';
import { docker, ownPortRange, provisionDocker } from '../helpers/docker.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/*
 * A named volume's backups on the real engine (npm start's build): a busybox service writes files into
 * its volume, a live and a stopped backup are taken (each a tar streamed out of a helper container),
 * the files change, a restore brings the backed-up ones back, a drill restores into a scratch volume and
 * counts files and bytes, and a backup file changed on disk is refused before the volume is touched.
 */
const suffix = randomBytes(4).toString('hex');
let server: ServerProcess;
let call: ReturnType<typeof api>;
let projectId = '';

beforeAll(async () => {
  await provisionDocker({ images: 'busybox,debian' });
  server = await startServerProcess({ BUILD_CONCURRENCY: '1', STOP_GRACE_SECONDS: '1', HOST_PORT_RANGE: ownPortRange() });
  call = api(server.url, server.token);
  projectId = (await call('POST', '/api/projects', { name: `volumes-${suffix}` })).json.project.id;
}, 120_000);

afterAll(async () => {
  if (call && projectId) await call('DELETE', `/api/projects/${projectId}`);
  await server?.dispose();
});

async function finished(path: string, id: string, field: (b: any) => string | undefined, wanted: string[]) {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
    const list = await call('GET', path);
    const backup = list.json.backups.find((b: { id: string }) => b.id === id);
    if (wanted.includes(field(backup) ?? '')) return backup;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`backup ${id} did not reach ${wanted.join('/')}`);
}

const t0 = Date.now();
const step = (name: string) => console.log(`volume-backups: ${name} at ${Date.now() - t0} ms`);

it('backs a volume up live and stopped, restores it after its checksum, drills it, and refuses a changed file', {
  timeout: 180_000,
}, async () => {
  const created = await call('POST', `/api/projects/${projectId}/services`, {
    name: `files-${suffix}`,
    repoUrl: 'container-image',
    containerImage: 'busybox:latest',
    internalPort: 3000,
    startCommand: 'mkdir -p /www && echo ok > /www/index.html && exec httpd -f -p 3000 -h /www',
    volumes: [{ name: 'data', mountPath: '/data' }],
  });
  expect(created.status, created.text).toBe(201);
  const serviceId = created.json.service.id;
  const first = await deploy(call, serviceId, 60_000);
  expect(first.deployment.status, first.logs.join('\n')).toBe('succeeded');
  const container = first.deployment.containerName as string;
  await docker('exec', container, 'sh', '-c', 'mkdir -p /data/sub && echo one > /data/a.txt && echo two > /data/sub/b.txt');

  step('deployed');
  const base = `/api/services/${serviceId}/volumes/data/backups`;
  const live = await call('POST', base, { mode: 'live' });
  expect(live.status, live.text).toBe(201);
  const liveDone = await finished(base, live.json.backup.id, (b) => b?.status, ['succeeded', 'failed']);
  expect(liveDone.status, JSON.stringify(liveDone)).toBe('succeeded');
  const stopped = await call('POST', base, {});
  expect(stopped.status, stopped.text).toBe(201);
  const stoppedDone = await finished(base, stopped.json.backup.id, (b) => b?.status, ['succeeded', 'failed']);
  expect(stoppedDone.status, JSON.stringify(stoppedDone)).toBe('succeeded');
  step('backed up');
  const stoppedLog = (await call('GET', `${base}/${stopped.json.backup.id}/logs`)).json.logs
    .map((l: { line: string }) => l.line)
    .join('\n');
  expect(stoppedLog).toMatch(/s of downtime for the snapshot/);

  // The files change; the restore brings the backed-up ones back, and the service serves again.
  const running = async () => (await docker('ps', '-q', '--filter', `label=slipway.service=${serviceId}`)).split('\n').filter(Boolean);
  const [now] = await running();
  await docker('exec', now!, 'sh', '-c', 'rm -r /data/sub && echo changed > /data/a.txt && echo new > /data/c.txt');
  const restored = await call('POST', `${base}/${live.json.backup.id}/restore`, {});
  expect(restored.status, restored.text).toBe(200);
  const [after] = await running();
  expect(await docker('exec', after!, 'sh', '-c', 'cat /data/a.txt /data/sub/b.txt; ls /data')).toBe('one\ntwo\na.txt\nsub');

  step('restored');
  // A drill restores into a scratch volume and counts files and bytes against the backup's.
  const drill = await call('POST', `${base}/${live.json.backup.id}/drill`, {});
  expect(drill.status, drill.text).toBe(200);
  const drilled = await finished(base, live.json.backup.id, (b) => b?.drill?.status, ['passed', 'failed', 'skipped']);
  expect(drilled.drill, JSON.stringify(drilled.drill)).toMatchObject({ status: 'passed', checksumOk: true });

  step('drilled');
  // A backup file changed on disk: 409 checksum_mismatch, and the volume is untouched.
  expect(stoppedDone.localPath, JSON.stringify(stoppedDone)).toMatch(/^\//);
  appendFileSync(stoppedDone.localPath, 'x');
  const refused = await call('POST', `${base}/${stopped.json.backup.id}/restore`, {});
  expect(refused.status, refused.text).toBe(409);
  expect(refused.json.error).toBe('checksum_mismatch');
  const [still] = await running();
  expect(await docker('exec', still!, 'sh', '-c', 'cat /data/a.txt; ls /data')).toBe('one\na.txt\nsub');
});
