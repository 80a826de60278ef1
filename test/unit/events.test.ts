import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Actor, DomainEvent, EventType } from '../../src/index.js';
import { AuditService } from '../../src/audit/audit.service.js';
import type { EventStreamItem } from '../../src/events/event-stream.service.js';
import { CrashLoopDetector, type LiveServiceLookup } from '../../src/monitoring/crash-loop-detector.js';
import { HostMonitor } from '../../src/monitoring/host-monitor.js';
import { eventsHarness, type EventsHarness } from '../helpers/events-harness.js';
import { NotifyReceiver } from '../standins/notify-receivers.js';

const owner: Actor = { keyId: 'owner', access: 'write', projectIds: null };
const ref = { projectId: 'proj1', environmentId: 'proj1', serviceId: 'svc1', serviceName: 'web' };

let h: EventsHarness;
afterEach(async () => {
  await h?.close();
});

/** A clock the test moves. */
function manualClock(start = Date.parse('2026-12-01T00:00:00Z')) {
  let now = start;
  return { now: () => new Date(now), advance: (ms: number) => void (now += ms) };
}

async function events(): Promise<Array<{ type: EventType; data: Record<string, unknown> }>> {
  return (await h.database.store.events.after(0, 1000)).map((e: DomainEvent) => ({
    type: e.type,
    data: e.data as unknown as Record<string, unknown>,
  }));
}

describe('crash-loop detector', () => {
  function detector(clock: ReturnType<typeof manualClock>, lookup: Partial<LiveServiceLookup> = {}) {
    return new CrashLoopDetector(
      clock,
      h.publisher,
      {
        liveService: async () => ({ ...ref, engine: null }),
        running: async () => true,
        ...lookup,
      },
      () => ({ exits: 3, windowMs: 300_000, reminderMs: 30 * 60_000 }),
    );
  }
  const exit = (clock: ReturnType<typeof manualClock>) => ({
    containerId: 'c',
    serviceId: 'svc1',
    deploymentId: 'd',
    exitCode: 1,
    at: clock.now(),
  });

  it('one alert for 3 exits within the window, a reminder at most every 30 minutes, one recovered', async () => {
    const clock = manualClock();
    h = await eventsHarness({ clock });
    const d = detector(clock);
    for (let i = 0; i < 2; i++) {
      await d.onExit(exit(clock));
      clock.advance(30_000);
    }
    expect(await events()).toEqual([]);
    await d.onExit(exit(clock));
    expect((await events()).map((e) => e.type)).toEqual(['service.crash_looping']);
    expect((await events())[0]!.data).toMatchObject({ ...ref, exits: 3, windowMs: 300_000, reminder: false, lastExitCode: 1 });
    // Docker restarts it again and again: no second alert within 30 minutes.
    for (let i = 0; i < 20; i++) {
      clock.advance(60_000);
      await d.onExit(exit(clock));
      await d.tick();
    }
    expect((await events()).map((e) => e.type)).toEqual(['service.crash_looping']);
    clock.advance(10 * 60_000);
    await d.onExit(exit(clock));
    expect((await events()).map((e) => e.type)).toEqual(['service.crash_looping', 'service.crash_looping']);
    expect((await events())[1]!.data).toMatchObject({ reminder: true });
    expect(d.looping()).toEqual(['svc1']);
    // Quiet for less than a window: still looping.
    clock.advance(299_000);
    await d.tick();
    expect((await events()).length).toBe(2);
    clock.advance(2_000);
    await d.tick();
    await d.tick();
    expect((await events()).map((e) => e.type)).toEqual(['service.crash_looping', 'service.crash_looping', 'service.recovered']);
    expect((await events())[2]!.data).toMatchObject({ ...ref, exits: 24 });
    expect(d.looping()).toEqual([]);
  });

  it('exits spread wider than the window are no loop; exits of replaced containers are not counted', async () => {
    const clock = manualClock();
    h = await eventsHarness({ clock });
    const d = detector(clock);
    for (let i = 0; i < 6; i++) {
      await d.onExit(exit(clock));
      clock.advance(200_000);
    }
    const ignoring = detector(clock, { liveService: async () => null });
    for (let i = 0; i < 6; i++) await ignoring.onExit(exit(clock));
    expect(await events()).toEqual([]);
  });

  it('a database that stops on its own is reported once per episode', async () => {
    const clock = manualClock();
    h = await eventsHarness({ clock });
    const d = detector(clock, { liveService: async () => ({ ...ref, engine: 'postgres' }) });
    await d.onExit({ ...exit(clock), exitCode: 137 });
    clock.advance(1_000);
    await d.onExit(exit(clock));
    expect((await events()).map((e) => e.type)).toEqual(['database.stopped_unexpectedly']);
    expect((await events())[0]!.data).toMatchObject({ engine: 'postgres', exitCode: 137 });
  });
});

describe('host monitor', () => {
  it('health failing after 3 misses in a row, reported once, and passing again', async () => {
    h = await eventsHarness();
    let answer: string | null = 'no answer on 10.0.0.5:3000';
    const monitor = new HostMonitor(h.publisher, { liveWebServices: async () => [{ ...ref, check: async () => answer }] }, null, () => ({
      healthFailures: 3,
      diskPath: '/',
      diskThresholdPercent: 90,
    }));
    for (let i = 0; i < 5; i++) await monitor.pass();
    expect((await events()).map((e) => e.type)).toEqual(['service.health_failing']);
    expect((await events())[0]!.data).toMatchObject({ failures: 3, reason: 'no answer on 10.0.0.5:3000' });
    expect(monitor.failingServices()).toEqual(['svc1']);
    answer = null;
    await monitor.pass();
    await monitor.pass();
    expect((await events()).map((e) => e.type)).toEqual(['service.health_failing', 'service.health_recovered']);
  });

  it('disk above the threshold once, fine again only 5 points below it', async () => {
    h = await eventsHarness();
    let free = 50;
    const monitor = new HostMonitor(h.publisher, null, { usage: async () => ({ totalBytes: 1000, freeBytes: free }) }, () => ({
      healthFailures: 3,
      diskPath: '/data',
      diskThresholdPercent: 90,
    }));
    await monitor.pass();
    await monitor.pass();
    free = 120;
    await monitor.pass();
    free = 160;
    await monitor.pass();
    expect(await events()).toEqual([
      { type: 'host.disk_high', data: { path: '/data', usedPercent: 95, freeBytes: 50, totalBytes: 1000 } },
      { type: 'host.disk_ok', data: { path: '/data', usedPercent: 84, freeBytes: 160, totalBytes: 1000 } },
    ]);
  });
});

describe('the event stream', () => {
  async function take(stream: AsyncGenerator<EventStreamItem>, count: number): Promise<Array<Extract<EventStreamItem, { type: 'event' }>>> {
    const got: Array<Extract<EventStreamItem, { type: 'event' }>> = [];
    while (got.length < count) {
      const next = await Promise.race([
        stream.next(),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`only ${got.length} of ${count} events`)), 5_000)),
      ]);
      if (next.done) break;
      if (next.value.type === 'event') got.push(next.value);
    }
    return got;
  }

  it('streams new events live, resumes after Last-Event-ID skipping nothing, and shows each caller only what it may see', async () => {
    h = await eventsHarness();
    const controller = new AbortController();
    const live = await h.stream.stream(owner, { signal: controller.signal });
    const scoped = await h.stream.stream({ keyId: 's', access: 'read', projectIds: ['proj1'] }, { signal: controller.signal });
    await h.publisher.publish('deployment.queued', { ...ref, deploymentId: 'd1', trigger: 'manual', commitSha: null, reason: null });
    await h.publisher.publish('api_key.created', { apiKeyId: 'k', name: 'ci', access: 'write', projectIds: null });
    await h.publisher.publish('backup.failed', { ...ref, projectId: 'other', backupId: 'b', storage: 'disk', sizeBytes: null, error: 'x' });
    await h.publisher.publish('deployment.started', { ...ref, deploymentId: 'd1', trigger: 'manual', commitSha: null, reason: null });
    const all = await take(live, 4);
    expect(all.map((e) => e.event.type)).toEqual(['deployment.queued', 'api_key.created', 'backup.failed', 'deployment.started']);
    expect(all.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    const mine = await take(scoped, 2);
    expect(mine.map((e) => e.event.type)).toEqual(['deployment.queued', 'deployment.started']);
    controller.abort();
    // A client that saw seq 1 resumes: everything after it, nothing before.
    const resumed = await h.stream.stream(owner, { lastEventId: 1, signal: new AbortController().signal });
    expect((await take(resumed, 3)).map((e) => e.seq)).toEqual([2, 3, 4]);
    await resumed.return(undefined);
  });
});

describe('audit service', () => {
  it('records writes and refusals, lists them newest first with a cursor, filters, and holds no body', async () => {
    const clock = manualClock();
    h = await eventsHarness({ clock });
    const audit = new AuditService(h.deps);
    for (let i = 0; i < 5; i++) {
      await audit.record({
        who: owner,
        operation: 'projects.create',
        door: 'rest',
        targetIds: [`p${i}`],
        projectId: `p${i}`,
        clientAddress: '10.0.0.1',
        outcome: 'success',
      });
      clock.advance(1000);
    }
    await audit.record({ who: { system: 'backups.schedule' }, operation: 'backups.create', door: 'schedule', outcome: 'success' });
    await audit.record({ who: null, operation: 'projects.list', door: 'rest', clientAddress: '10.0.0.9', outcome: 'unauthorized' });
    const first = await audit.list(owner, { limit: 3 });
    expect(first.entries.map((e) => e.operation)).toEqual(['projects.list', 'backups.create', 'projects.create']);
    expect(first.entries[0]).toMatchObject({ actor: { kind: 'anonymous', id: null }, outcome: 'unauthorized', clientAddress: '10.0.0.9' });
    expect(first.entries[1]).toMatchObject({ actor: { kind: 'system', id: 'backups.schedule' }, door: 'schedule' });
    const second = await audit.list(owner, { limit: 3, cursor: first.nextCursor! });
    expect(second.entries.map((e) => e.targetIds[0])).toEqual(['p3', 'p2', 'p1']);
    expect((await audit.list(owner, { projectId: 'p2' })).entries).toHaveLength(1);
    expect((await audit.list(owner, { actor: 'owner' })).entries).toHaveLength(5);
    expect((await audit.list(owner, { from: new Date(Date.parse('2026-12-01T00:00:02Z')).toISOString() })).entries).toHaveLength(5);
    const member: Actor = { keyId: 'm', access: 'write', projectIds: null, userId: 'u', role: 'member' };
    await expect(audit.list(member, {})).rejects.toMatchObject({ code: 'forbidden' });
    await expect(audit.list(owner, { from: 'yesterday' })).rejects.toMatchObject({ code: 'validation_error', details: { field: 'from' } });
  });

  it('keeps a guesser from filling the log: at most 60 failed authentications per address and minute', async () => {
    h = await eventsHarness();
    const audit = new AuditService(h.deps);
    for (let i = 0; i < 200; i++)
      await audit.record({ who: null, operation: 'projects.list', door: 'rest', clientAddress: '203.0.113.7', outcome: 'unauthorized' });
    expect((await audit.list(owner, { limit: 500 })).entries).toHaveLength(60);
  });

  it('finds the project and targets of an input, through the ids it names', async () => {
    h = await eventsHarness();
    const audit = new AuditService(h.deps);
    expect(await audit.locate({ projectId: 'p1', name: 'x', config: { secretValue: 'hunter2' } })).toEqual({
      targetIds: ['p1'],
      projectId: 'p1',
    });
    expect(await audit.locate({ serviceId: 'nope' })).toEqual({ targetIds: ['nope'], projectId: null });
    expect(audit.createdIds({ project: { id: 'new' }, token: 'slw_secret' })).toEqual(['new']);
  });
});

describe('the outbox', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('an event committed by a process that died before sending it is delivered by the next one, with the same webhook-id on retries', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'slipway-outbox-'));
    dirs.push(dir);
    const receiver = await new NotifyReceiver('webhook').start();
    try {
      h = await eventsHarness({ dataDir: dir });
      const { channel, secret } = await h.notifications.createChannel(owner, { type: 'webhook', name: 'w', config: receiver.config() });
      receiver.secret = secret!;
      await h.notifications.createRule(owner, { projectId: null, events: ['*'], channelIds: [channel.id] });
      await h.publisher.publish('host.disk_high', { path: '/data', usedPercent: 91, freeBytes: 1, totalBytes: 10 });
      // The first process goes away with the event in the outbox, never dispatched.
      await h.close();
      h = await eventsHarness({ dataDir: dir, events: { retryBaseMs: 20 } });
      receiver.failNext(1);
      for (let i = 0; i < 50 && receiver.received.length === 0; i++) {
        await h.flush();
        await new Promise((resolve) => setTimeout(resolve, 30));
      }
      const [message] = await receiver.waitFor(1);
      expect(message!.json).toMatchObject({ type: 'host.disk_high', data: { data: { usedPercent: 91 } } });
      const { deliveries } = await h.notifications.listDeliveries(owner, { channelId: channel.id });
      expect(deliveries).toHaveLength(1);
      expect(message!.headers['webhook-id']).toBe(`msg_${deliveries[0]!.id}`);
      expect(deliveries[0]!.attempts.map((a) => a.ok)).toEqual([false, true]);
    } finally {
      await receiver.close();
    }
  });

  it('10,000 undelivered events are fanned out in batches; the worker holds only what it sends', async () => {
    h = await eventsHarness({ events: { deliveryConcurrency: 8 } });
    const receiver = await new NotifyReceiver('webhook').start();
    try {
      receiver.hang();
      const { channel, secret } = await h.notifications.createChannel(owner, { type: 'webhook', name: 'w', config: receiver.config() });
      receiver.secret = secret!;
      await h.notifications.createRule(owner, { projectId: null, events: ['*'], channelIds: [channel.id] });
      await h.database.store.transaction(async (tx) => {
        for (let i = 0; i < 10_000; i++)
          await h.publisher.publish('host.disk_ok', { path: '/d', usedPercent: i, freeBytes: 1, totalBytes: 2 }, { store: tx });
      });
      await h.dispatcher.drain();
      expect(await h.database.store.events.countUndispatched()).toBe(0);
      expect(await h.database.store.notifications.countOpen()).toBe(10_000);
      h.worker.start();
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(h.worker.busy).toBe(8);
    } finally {
      await receiver.close();
    }
  }, 120_000);
});
