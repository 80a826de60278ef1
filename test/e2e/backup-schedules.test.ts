import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy } from '../helpers/deployments.js';
import { ownPortRange, provisionDocker } from '../helpers/docker.js';
import { expectErrorShape } from '../helpers/error-bodies.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/*
 * Backup configurations end to end, over real HTTP: a PostgreSQL service (the stand-in image's
 * PostgreSQL 15 and its pg_dump) on the real Docker engine, backed up to the platform's disk. A
 * schedule's slot is made to come by restarting the platform with its clock ahead (CLOCK_OFFSET_MS):
 * the slots passed while it was down run once, then retention removes the oldest backup's file.
 */

type Call = ReturnType<typeof api>;
type Backup = { id: string; status: string; trigger: string; localPath: string | null; error: string | null; checksum: string };
type Configuration = { id: string; nextRunAt: string; lastRunAt: string | null; lastError: string | null; managed: string | null };

const HOUR = 3_600_000;
let server: ServerProcess;
let call: Call;
let projectId: string;
let dbId: string;
const servers: ServerProcess[] = [];
const SERVER_ENV = {
  BUILD_CONCURRENCY: '2',
  HEALTH_TIMEOUT_MS: '120000',
  STOP_GRACE_SECONDS: '5',
  HOST_PORT_RANGE: ownPortRange(),
  BACKUP_SCHEDULER_INTERVAL_MS: '1000',
};

beforeAll(async () => {
  await provisionDocker({ images: 'busybox,debian,postgres' });
  server = await startServerProcess(SERVER_ENV);
  servers.push(server);
  call = api(server.url, server.token);
  projectId = (await call('POST', '/api/projects', { name: `schedules-${Date.now()}` })).json.project.id;
  const created = await call('POST', '/api/databases', { projectId, engine: 'postgres', name: 'orders db' });
  expect(created.status, created.text).toBe(201);
  dbId = created.json.database.id;
  const result = await deploy(call, dbId, 5 * 60_000);
  expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
  for (const sql of ['CREATE TABLE orders (id int primary key)', 'INSERT INTO orders VALUES (1)']) {
    const made = await call('POST', `/api/databases/${dbId}/query`, { sql });
    expect(made.status, made.text).toBe(200);
  }
}, 15 * 60_000);

afterAll(async () => {
  if (projectId && call) await call('DELETE', `/api/projects/${projectId}`).catch(() => undefined);
  for (const s of servers.reverse()) await s.dispose();
});

/** The platform again on the same data, its clock `offsetMs` ahead of this host's. */
async function restartWithClockAhead(offsetMs: number): Promise<void> {
  expect(await server.stop()).toBe(0);
  server = await startServerProcess(
    { ...SERVER_ENV, CLOCK_OFFSET_MS: String(Math.round(offsetMs)) },
    { dataDir: server.dataDir, token: server.token },
  );
  servers.push(server);
  call = api(server.url, server.token);
}

async function records(id: string): Promise<Backup[]> {
  const res = await call('GET', `/api/backups/${id}/records`);
  expect(res.status, res.text).toBe(200);
  return res.json.records;
}

async function configuration(id: string): Promise<Configuration> {
  const res = await call('GET', `/api/backups/${id}`);
  expect(res.status, res.text).toBe(200);
  return res.json.configuration;
}

/** Polls the records until `done` holds of them. */
async function recordsUntil(id: string, done: (list: Backup[]) => boolean, timeoutMs = 120_000): Promise<Backup[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const list = await records(id);
    if (done(list)) return list;
    if (Date.now() > deadline) throw new Error(`records of ${id} not as expected in time: ${JSON.stringify(list)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
const allEnded = (list: Backup[]) => list.every((b) => b.status !== 'running');

describe('backup configurations of a PostgreSQL service', () => {
  it('refuses a bad schedule with a 400 naming the field and saying why', async () => {
    for (const [schedule, message] of [
      ['0 3 * * * *', /seconds are not supported/],
      ['*/1 * * * *', /at most every 5 minutes/],
      ['0 3 32 * *', /day-of-month field "32": 32 is out of range 1-31/],
    ] as const) {
      const res = await call('POST', '/api/backups', { serviceId: dbId, schedule });
      expectErrorShape(res, 400, schedule);
      expect(res.json).toMatchObject({ error: 'validation_error', details: { field: 'schedule' } });
      expect(res.json.message).toMatch(message);
    }
  });

  it('creates a configuration, triggers it (201, running) and sees the record succeed', { timeout: 3 * 60_000 }, async () => {
    // Daily, 12 hours from now: the slot never comes while the test runs.
    const hour = String((new Date().getUTCHours() + 12) % 24).padStart(2, '0');
    const schedule = `30 ${Number(hour)} * * *`;
    const created = await call('POST', '/api/backups', { serviceId: dbId, schedule, retention: { count: 5 } });
    expect(created.status, created.text).toBe(201);
    const config = created.json.configuration;
    expect(config).toMatchObject({ serviceId: dbId, projectId, schedule, storage: 'disk', managed: null });
    expect(config.nextRunAt).toMatch(new RegExp(`T${hour}:30:00\\.000Z$`));
    const listed = await call('GET', `/api/backups?serviceId=${dbId}`);
    expect(listed.json.configurations.map((c: Configuration) => c.id)).toContain(config.id);

    const triggered = await call('POST', `/api/backups/${config.id}/trigger`);
    expect(triggered.status, triggered.text).toBe(201);
    expect(triggered.json.backup).toMatchObject({
      serviceId: dbId,
      status: 'running',
      trigger: 'manual',
      storage: 'disk',
      finishedAt: null,
    });
    const [record] = await recordsUntil(config.id, allEnded);
    expect(record).toMatchObject({ id: triggered.json.backup.id, status: 'succeeded', error: null });
    expect(record!.checksum).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(existsSync(record!.localPath!)).toBe(true);
    // The same Backup through the detailed API.
    const detailed = (await call('GET', `/api/services/${dbId}/database/backups`)).json.backups as Backup[];
    expect(detailed.find((b) => b.id === record!.id)).toEqual(record);

    const deleted = await call('DELETE', `/api/backups/${config.id}`);
    expect(deleted.status, deleted.text).toBe(200);
    expectErrorShape(await call('GET', `/api/backups/${config.id}`), 404, 'deleted configuration');
    expect(((await call('GET', `/api/services/${dbId}/database/backups`)).json.backups as Backup[]).map((b) => b.id)).toContain(record!.id);
  });

  it('fires on its schedule once the clock reaches it, once for the slots missed while down, and applies its retention', {
    timeout: 8 * 60_000,
  }, async () => {
    // Hourly, at the minute half an hour from now: its first slot does not come before the platform is restarted ahead.
    const minute = (new Date().getUTCMinutes() + 30) % 60;
    const created = await call('POST', '/api/backups', { serviceId: dbId, schedule: `${minute} * * * *`, retention: { count: 2 } });
    expect(created.status, created.text).toBe(201);
    const id = created.json.configuration.id as string;
    const firstSlot = Date.parse(created.json.configuration.nextRunAt);
    const triggered = (await call('POST', `/api/backups/${id}/trigger`)).json.backup as Backup;
    const [oldest] = await recordsUntil(id, allEnded);
    expect(oldest).toMatchObject({ id: triggered.id, status: 'succeeded' });

    // Down over three hourly slots: back half an hour after the third, the latest one runs, once.
    let offset = firstSlot + 2 * HOUR + HOUR / 2 - Date.now();
    await restartWithClockAhead(offset);
    let list = await recordsUntil(id, (l) => l.length === 2 && allEnded(l));
    expect(list.map((b) => [b.trigger, b.status])).toEqual([
      ['schedule', 'succeeded'],
      ['manual', 'succeeded'],
    ]);
    const fired = list[0]!;
    const after = await configuration(id);
    expect(after.nextRunAt).toBe(new Date(firstSlot + 3 * HOUR).toISOString());
    expect(after.lastError).toBeNull();
    // Several passes later, still one backup for those slots.
    await new Promise((r) => setTimeout(r, 3_000));
    expect((await records(id)).map((b) => b.id)).toEqual([fired.id, oldest!.id]);

    // The next slot: a third succeeded backup, and retention (count 2) removes the oldest from disk.
    offset += HOUR;
    await restartWithClockAhead(offset);
    list = await recordsUntil(id, (l) => l.length === 2 && allEnded(l) && l[0]!.id !== fired.id);
    expect(list.map((b) => [b.trigger, b.status])).toEqual([
      ['schedule', 'succeeded'],
      ['schedule', 'succeeded'],
    ]);
    expect(list[1]!.id).toBe(fired.id);
    expect(existsSync(oldest!.localPath!)).toBe(false);
    const detailed = ((await call('GET', `/api/services/${dbId}/database/backups`)).json.backups as Backup[]).map((b) => b.id);
    expect(detailed).not.toContain(oldest!.id);
    expect(existsSync(list[0]!.localPath!)).toBe(true);
  });

  it('lists the daily/weekly/monthly switches as managed configurations, deleted only by turning them off', {
    timeout: 3 * 60_000,
  }, async () => {
    const put = await call('PUT', `/api/services/${dbId}/database/backups/settings`, {
      automaticEnabled: true,
      weeklyEnabled: false,
      keepDaily: 2,
    });
    expect(put.status, put.text).toBe(200);
    const listed = (await call('GET', `/api/backups?serviceId=${dbId}`)).json.configurations as Array<
      Configuration & { schedule: string; retention: { count: number } }
    >;
    const managed = listed.filter((c) => c.managed);
    expect(managed.map((c) => [c.managed, c.schedule, c.retention.count])).toEqual([
      ['daily', '0 0 * * *', 2],
      ['monthly', '0 0 1 * *', 12],
    ]);
    // The day under way has no daily backup yet: the scheduler makes it at once.
    const daily = managed[0]!;
    const [made] = await recordsUntil(daily.id, (l) => l.length === 1 && allEnded(l));
    expect(made).toMatchObject({ trigger: 'daily', status: 'succeeded' });
    const refused = await call('DELETE', `/api/backups/${daily.id}`);
    expectErrorShape(refused, 409, 'managed configuration');
    expect(refused.json.message).toMatch(/dailyEnabled/);
    await call('PUT', `/api/services/${dbId}/database/backups/settings`, { automaticEnabled: false });
    expect(((await call('GET', `/api/backups?serviceId=${dbId}`)).json.configurations as Configuration[]).filter((c) => c.managed)).toEqual(
      [],
    );
  });
});
