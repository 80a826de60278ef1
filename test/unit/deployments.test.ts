import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConflictError, NotFoundError } from '../../src/domain/errors.js';
import type { DeploymentStreamEvent, RuntimeStreamEvent } from '../../src/index.js';
import type { RuntimeLogLine } from '../../src/deployments/runtime-logs.port.js';
import { freshHarnessPerTest, admin, scoped, h, repo, project, rejection, nextEvent, collect } from '../helpers/unit-harness.js';

/** Deployments, their log stream and the runtime log stream (src/deployments). */
freshHarnessPerTest();

describe('deployments', () => {
  let serviceId: string;
  beforeEach(async () => {
    const p = await project();
    serviceId = (await h.services.serviceCreation.create(admin, p.id, repo('web'))).id;
  });

  it('creates a queued manual deployment with nulls', async () => {
    const d = await h.services.deployments.create(admin, serviceId);
    expect(d).toMatchObject({
      serviceId,
      status: 'queued',
      trigger: 'manual',
      commitSha: null,
      imageTag: null,
      containerName: null,
      startedAt: null,
      finishedAt: null,
    });
    expect(new Date(d.createdAt).toISOString()).toBe(d.createdAt);
    expect((await h.services.deployments.list(admin, serviceId)).map((x) => x.id)).toEqual([d.id]);
    expect(await h.services.deployments.get(admin, d.id)).toEqual(d);
    const row = await h.database.store.deployments.get(d.id);
    expect(row).toMatchObject({ status: 'queued', abortRequested: false });
  });

  it('aborting a queued deployment ends it aborted with a log line; a second abort is a conflict', async () => {
    const d = await h.services.deployments.create(admin, serviceId);
    const before = await h.services.deployments.logs(admin, d.id);
    await h.services.deployments.abort(admin, d.id);
    const row = await h.database.store.deployments.get(d.id);
    expect(row).toMatchObject({ status: 'aborted', abortRequested: true });
    expect(row!.finishedAt).toBeInstanceOf(Date);
    const logs = await h.services.deployments.logs(admin, d.id);
    expect(logs).toHaveLength(before.length + 1);
    expect(logs.at(-1)!.line.toLowerCase()).toContain('abort');
    expect(logs.at(-1)).toMatchObject({ deploymentId: d.id, stream: 'stdout' });

    const error = await rejection(h.services.deployments.abort(admin, d.id));
    expect(error).toBeInstanceOf(ConflictError);
    expect((await h.database.store.deployments.get(d.id))!.status).toBe('aborted');
    expect(await h.services.deployments.logs(admin, d.id)).toHaveLength(logs.length);
  });

  it('aborting publishes the terminal status to live subscribers', async () => {
    const d = await h.services.deployments.create(admin, serviceId);
    const events: string[] = [];
    h.logBus.subscribe(d.id, (e) => events.push(e.type === 'status' ? `status:${e.status}` : 'log'));
    await h.services.deployments.abort(admin, d.id);
    expect(events).toEqual(['log', 'status:aborted']);
  });

  it.each(['succeeded', 'failed'] as const)('a %s deployment cannot be aborted', async (status) => {
    const d = await h.services.deployments.create(admin, serviceId);
    await h.database.store.deployments.update(d.id, { status });
    await expect(h.services.deployments.abort(admin, d.id)).rejects.toBeInstanceOf(ConflictError);
    expect((await h.database.store.deployments.get(d.id))!).toMatchObject({ status, abortRequested: false });
  });

  it('aborting a running deployment flags it and tells the abort listeners', async () => {
    const d = await h.services.deployments.create(admin, serviceId);
    await h.database.store.deployments.update(d.id, { status: 'running', startedAt: new Date() });
    const told: string[] = [];
    const unsubscribe = h.services.deployments.onAbort((id) => told.push(id));
    await h.services.deployments.abort(admin, d.id);
    expect(told).toEqual([d.id]);
    const row = await h.database.store.deployments.get(d.id);
    // The runner finishes the move to aborted once its work has stopped.
    expect(row).toMatchObject({ status: 'running', abortRequested: true, finishedAt: null });
    expect((await h.services.deployments.logs(admin, d.id)).at(-1)!.line.toLowerCase()).toContain('abort');

    unsubscribe();
    await h.database.store.deployments.update(d.id, { status: 'aborted' });
    await expect(h.services.deployments.abort(admin, d.id)).rejects.toBeInstanceOf(ConflictError);
    expect(told).toEqual([d.id]);
  });

  it('appendLog stores lines with ascending ids and publishes them', async () => {
    const d = await h.services.deployments.create(admin, serviceId);
    const published: number[] = [];
    h.logBus.subscribe(d.id, (e) => e.type === 'log' && published.push(e.line.id));
    const records = await h.services.deployments.appendLog(d.id, 'stderr', 'one', 'two', 'three');
    expect(records.map((r) => r.line)).toEqual(['one', 'two', 'three']);
    expect(records.every((r, i) => i === 0 || r.id > records[i - 1]!.id)).toBe(true);
    expect(published).toEqual(records.map((r) => r.id));
    const logs = await h.services.deployments.logs(admin, d.id);
    expect(logs.slice(-3)).toEqual(
      records.map((r) => ({ id: r.id, deploymentId: d.id, line: r.line, stream: 'stderr', createdAt: r.createdAt.toISOString() })),
    );
  });
});

describe('deployment log stream', () => {
  let serviceId: string;
  let deploymentId: string;
  const controllers: AbortController[] = [];
  const open = async (lastEventId?: number) => {
    const controller = new AbortController();
    controllers.push(controller);
    return h.services.deployments.stream(admin, deploymentId, { lastEventId, signal: controller.signal });
  };
  beforeEach(async () => {
    const p = await project();
    serviceId = (await h.services.serviceCreation.create(admin, p.id, repo('web'))).id;
    deploymentId = (await h.services.deployments.create(admin, serviceId)).id;
  });
  afterEach(() => {
    for (const c of controllers.splice(0)) c.abort();
  });

  it('sends the snapshot first, then live lines in order with ascending ids', async () => {
    const stream = await open();
    const first = await nextEvent(stream);
    expect(first.done).toBe(false);
    const snapshot = first.value as Extract<DeploymentStreamEvent, { type: 'snapshot' }>;
    expect(snapshot.type).toBe('snapshot');
    expect(snapshot.lines.map((l) => l.line)).toEqual([expect.stringContaining('queued')]);
    expect(snapshot.lastId).toBe(snapshot.lines.at(-1)!.id);

    await h.services.deployments.appendLog(deploymentId, 'stdout', 'step 1', 'step 2');
    await h.services.deployments.appendLog(deploymentId, 'stderr', 'step 3');
    const lines: Array<{ id: number; line: string; stream: string }> = [];
    for (let i = 0; i < 3; i++) {
      const { value } = await nextEvent(stream);
      expect(value!.type).toBe('log');
      const line = (value as Extract<DeploymentStreamEvent, { type: 'log' }>).line;
      lines.push({ id: line.id, line: line.line, stream: line.stream });
      expect(line.deploymentId).toBe(deploymentId);
    }
    expect(lines.map((l) => l.line)).toEqual(['step 1', 'step 2', 'step 3']);
    expect(lines.map((l) => l.stream)).toEqual(['stdout', 'stdout', 'stderr']);
    const ids = [snapshot.lastId, ...lines.map((l) => l.id)];
    for (let i = 1; i < ids.length; i++) expect(ids[i]).toBeGreaterThan(ids[i - 1]!);
  });

  it('sends pings while nothing happens', async () => {
    const stream = await open();
    await nextEvent(stream);
    const started = Date.now();
    const { value } = await nextEvent(stream, 2_000);
    expect(value).toMatchObject({ type: 'ping' });
    const t = (value as Extract<DeploymentStreamEvent, { type: 'ping' }>).t;
    expect(Number.isInteger(t)).toBe(true);
    expect(Math.abs(t - Date.now())).toBeLessThan(5_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    expect(await nextEvent(stream, 2_000)).toMatchObject({ value: { type: 'ping' } });
    // A line still arrives after pings.
    await h.services.deployments.appendLog(deploymentId, 'stdout', 'late');
    expect(await nextEvent(stream)).toMatchObject({ value: { type: 'log', line: { line: 'late' } } });
  });

  it('resumes after lastEventId without repeating earlier lines', async () => {
    const records = await h.services.deployments.appendLog(deploymentId, 'stdout', 'a', 'b', 'c');
    const stream = await open(records[1]!.id);
    const { value } = await nextEvent(stream);
    expect(value).toMatchObject({ type: 'snapshot', lastId: records[2]!.id });
    expect((value as Extract<DeploymentStreamEvent, { type: 'snapshot' }>).lines.map((l) => l.line)).toEqual(['c']);
    await h.services.deployments.appendLog(deploymentId, 'stdout', 'd');
    expect(await nextEvent(stream)).toMatchObject({ value: { type: 'log', line: { line: 'd' } } });
  });

  it('resuming from the last line gives an empty snapshot that keeps the id', async () => {
    const records = await h.services.deployments.appendLog(deploymentId, 'stdout', 'a');
    const stream = await open(records[0]!.id);
    expect(await nextEvent(stream)).toMatchObject({ value: { type: 'snapshot', lines: [], lastId: records[0]!.id } });
  });

  it('ends after a terminal status is published, delivering the lines before it', async () => {
    const stream = await open();
    await nextEvent(stream);
    await h.services.deployments.appendLog(deploymentId, 'stdout', 'finishing');
    await h.database.store.deployments.update(deploymentId, { status: 'succeeded' });
    h.logBus.publish(deploymentId, { type: 'status', status: 'succeeded' });
    const rest = await collect(stream);
    expect(rest.filter((e) => e.type !== 'ping')).toEqual([{ type: 'log', line: expect.objectContaining({ line: 'finishing' }) }]);
    expect(await stream.next()).toEqual({ done: true, value: undefined });
  });

  it('ends on a published terminal status even before the row is updated', async () => {
    const stream = await open();
    await nextEvent(stream);
    h.logBus.publish(deploymentId, { type: 'status', status: 'failed' });
    expect(await collect(stream)).toEqual([]);
  });

  it('does not end on a non-terminal status', async () => {
    const stream = await open();
    await nextEvent(stream);
    h.logBus.publish(deploymentId, { type: 'status', status: 'running' });
    await h.services.deployments.appendLog(deploymentId, 'stdout', 'still here');
    expect(await nextEvent(stream)).toMatchObject({ done: false, value: { type: 'log', line: { line: 'still here' } } });
  });

  it('a stream of a finished deployment sends the snapshot and ends', async () => {
    await h.services.deployments.abort(admin, deploymentId);
    const stream = await open();
    const events = await collect(stream);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'snapshot' });
    expect((events[0] as Extract<DeploymentStreamEvent, { type: 'snapshot' }>).lines.length).toBeGreaterThanOrEqual(2);
  });

  it('stops when the client goes away', async () => {
    const controller = new AbortController();
    const stream = await h.services.deployments.stream(admin, deploymentId, { signal: controller.signal });
    await nextEvent(stream);
    const pending = nextEvent(stream, 2_000);
    controller.abort();
    expect(await pending).toEqual({ done: true, value: undefined });
  });

  it('checks access before streaming', async () => {
    const other = await project('Other');
    // Out of the key's scope reads as unknown (docs/decisions.md).
    await expect(
      h.services.deployments.stream(scoped(other.id), deploymentId, { signal: new AbortController().signal }),
    ).rejects.toBeInstanceOf(NotFoundError);
    await expect(h.services.deployments.stream(admin, 'nope', { signal: new AbortController().signal })).rejects.toBeInstanceOf(
      NotFoundError,
    );
  });
});

describe('runtime log stream', () => {
  let serviceId: string;
  beforeEach(async () => {
    const p = await project();
    serviceId = (await h.services.serviceCreation.create(admin, p.id, repo('web'))).id;
  });
  const line = (text: string, at: string, stream: 'stdout' | 'stderr' = 'stdout'): RuntimeLogLine => ({
    line: text,
    stream,
    createdAt: new Date(at),
  });

  it('sends the snapshot, an open status, lines with strictly ascending ids, then a closed status', async () => {
    h.runtimeLogs.scripts.set(serviceId, [
      { type: 'snapshot', lines: [line('boot', '2026-01-01T00:00:00.000Z'), line('ready', '2026-01-01T00:00:00.000Z')] },
      { type: 'line', line: line('GET /', '2026-01-01T00:00:01.000Z') },
      { type: 'line', line: line('GET /a', '2026-01-01T00:00:01.000Z', 'stderr') },
      // Out of order in time: the id still goes up.
      { type: 'line', line: line('GET /b', '2026-01-01T00:00:00.500Z') },
      { type: 'closed', ok: true, reason: 'container stopped' },
    ]);
    const stream = await h.services.runtimeLogs.stream(admin, serviceId, { signal: new AbortController().signal });
    const events = await collect<RuntimeStreamEvent>(stream);
    expect(events.map((e) => e.type)).toEqual(['snapshot', 'status', 'log', 'log', 'log', 'status']);
    const snapshot = events[0] as Extract<RuntimeStreamEvent, { type: 'snapshot' }>;
    expect(snapshot.lines.map((l) => l.line)).toEqual(['boot', 'ready']);
    expect(snapshot.lines[0]).toMatchObject({ stream: 'stdout', createdAt: '2026-01-01T00:00:00.000Z' });
    expect(events[1]).toMatchObject({ type: 'status', ok: true, closed: false });
    const logs = events.filter((e): e is Extract<RuntimeStreamEvent, { type: 'log' }> => e.type === 'log').map((e) => e.line);
    expect(logs.map((l) => [l.line, l.stream])).toEqual([
      ['GET /', 'stdout'],
      ['GET /a', 'stderr'],
      ['GET /b', 'stdout'],
    ]);
    const ids = [...snapshot.lines, ...logs].map((l) => l.id);
    for (const id of ids) expect(Number.isSafeInteger(id)).toBe(true);
    for (let i = 1; i < ids.length; i++) expect(ids[i]).toBeGreaterThan(ids[i - 1]!);
    expect(events.at(-1)).toMatchObject({ type: 'status', ok: true, closed: true });
    expect(h.runtimeLogs.opened).toEqual([serviceId]);
  });

  it('without a container: an empty snapshot, then status ok false and closed', async () => {
    const stream = await h.services.runtimeLogs.stream(admin, serviceId, { signal: new AbortController().signal });
    const events = await collect<RuntimeStreamEvent>(stream);
    expect(events).toHaveLength(2);
    expect(events[0]).toEqual({ type: 'snapshot', lines: [] });
    expect(events[1]).toMatchObject({ type: 'status', ok: false, closed: true });
  });

  it('a source that ends without closing still ends the stream with a closed status', async () => {
    h.runtimeLogs.scripts.set(serviceId, [{ type: 'snapshot', lines: [] }]);
    const stream = await h.services.runtimeLogs.stream(admin, serviceId, { signal: new AbortController().signal });
    const events = await collect<RuntimeStreamEvent>(stream);
    expect(events.map((e) => e.type)).toEqual(['snapshot', 'status', 'status']);
    expect(events.at(-1)).toMatchObject({ ok: true, closed: true });
  });

  it('resuming with a last id skips the lines already sent', async () => {
    const script = [
      { type: 'snapshot' as const, lines: [line('old', '2026-01-01T00:00:00.000Z'), line('new', '2026-01-01T00:00:02.000Z')] },
      { type: 'line' as const, line: line('newer', '2026-01-01T00:00:03.000Z') },
      { type: 'closed' as const, ok: true, reason: 'stopped' },
    ];
    h.runtimeLogs.scripts.set(serviceId, script);
    const firstRun = await collect<RuntimeStreamEvent>(
      await h.services.runtimeLogs.stream(admin, serviceId, { signal: new AbortController().signal }),
    );
    const oldId = (firstRun[0] as Extract<RuntimeStreamEvent, { type: 'snapshot' }>).lines[0]!.id;
    const resumed = await collect<RuntimeStreamEvent>(
      await h.services.runtimeLogs.stream(admin, serviceId, { lastEventId: oldId, signal: new AbortController().signal }),
    );
    const snapshot = resumed[0] as Extract<RuntimeStreamEvent, { type: 'snapshot' }>;
    expect(snapshot.lines.map((l) => l.line)).toEqual(['new']);
    expect(snapshot.lines[0]!.id).toBeGreaterThan(oldId);
  });

  it('resuming after a line does not lose a later line written in the same millisecond', async () => {
    // Two lines in one millisecond get ids T and T+1. A client that received only the first
    // resumes with T and must still get the second ("a client resuming with its last id gets what came after").
    h.runtimeLogs.scripts.set(serviceId, [
      { type: 'snapshot', lines: [line('first', '2026-01-01T00:00:05.000Z'), line('second', '2026-01-01T00:00:05.000Z')] },
      { type: 'closed', ok: true, reason: 'stopped' },
    ]);
    const firstRun = await collect<RuntimeStreamEvent>(
      await h.services.runtimeLogs.stream(admin, serviceId, { signal: new AbortController().signal }),
    );
    const [first, second] = (firstRun[0] as Extract<RuntimeStreamEvent, { type: 'snapshot' }>).lines;
    expect(second!.id).toBeGreaterThan(first!.id);

    const afterFirst = await collect<RuntimeStreamEvent>(
      await h.services.runtimeLogs.stream(admin, serviceId, { lastEventId: first!.id, signal: new AbortController().signal }),
    );
    const resumed = (afterFirst[0] as Extract<RuntimeStreamEvent, { type: 'snapshot' }>).lines;
    expect(resumed.map((l) => l.line)).toEqual(['second']);
    expect(resumed[0]!.id).toBeGreaterThan(first!.id);

    // And resuming after the second repeats nothing.
    const afterSecond = await collect<RuntimeStreamEvent>(
      await h.services.runtimeLogs.stream(admin, serviceId, { lastEventId: second!.id, signal: new AbortController().signal }),
    );
    expect((afterSecond[0] as Extract<RuntimeStreamEvent, { type: 'snapshot' }>).lines).toEqual([]);
  });

  it('checks access and existence before streaming', async () => {
    const other = await project('Other');
    const signal = new AbortController().signal;
    await expect(h.services.runtimeLogs.stream(scoped(other.id), serviceId, { signal })).rejects.toBeInstanceOf(NotFoundError);
    await expect(h.services.runtimeLogs.stream(admin, 'nope', { signal })).rejects.toBeInstanceOf(NotFoundError);
    expect(h.runtimeLogs.opened).toEqual([]);
  });
});
