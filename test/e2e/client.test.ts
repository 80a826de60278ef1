import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { TRPCClientError } from '@trpc/client';
import { createClient, SlipwayError } from 'slipway/client';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/** The typed client, imported as a user imports it, against the server started as npm start does. */
let server: ServerProcess;
beforeAll(async () => {
  server = await startServerProcess({ STREAM_PING_MS: '300' });
});
afterAll(async () => {
  await server?.dispose();
});

describe('typed client', () => {
  it('calls every kind of procedure with types and the spec error shape', async () => {
    const client = createClient({ url: server.url, token: server.token });
    const { project } = await client.projects.create.mutate({ name: 'Typed', description: 'from the client' });
    expect(project.slug).toBe('typed');
    const { service } = await client.services.create.mutate({ projectId: project.id, name: 'api', repoFullName: 'acme/api' });
    await client.env.set.mutate({ serviceId: service.id, key: 'GREETING', value: 'hi' });
    const overview = await client.services.overview.query({ serviceId: service.id });
    expect(overview.env.map((v) => [v.key, v.resolvedValue])).toEqual([['GREETING', 'hi']]);
    expect(typeof overview.service.createdAt).toBe('string');

    const error = await client.services.overview.query({ serviceId: 'missing' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SlipwayError);
    // Still a tRPC error, for code written against tRPC's own.
    expect(error).toBeInstanceOf(TRPCClientError);
    expect(error).toMatchObject({ code: 'not_found', status: 404, details: {} });
    expect((error as TRPCClientError<never>).data).toMatchObject({ error: 'not_found', httpStatus: 404 });

    const invalid = await client.projects.create.mutate({ name: 'X', colour: 'red' } as never).catch((e: unknown) => e);
    expect(invalid).toMatchObject({ code: 'validation_error', status: 400, details: { field: 'colour' } });

    const anonymous = createClient({ url: server.url, token: 'nope' });
    const denied = await anonymous.projects.list.query().catch((e: unknown) => e);
    expect(denied).toMatchObject({ name: 'SlipwayError', code: 'unauthorized', status: 401 });
  });

  it('takes an AbortSignal on every call, and says when nothing answers', async () => {
    const client = createClient({ url: server.url, token: server.token });
    const aborted = await client.projects.list.query(undefined, { signal: AbortSignal.abort() }).catch((e: unknown) => e);
    expect(aborted).toMatchObject({ name: 'SlipwayError', code: 'aborted', status: 0 });
    const gone = createClient({ url: 'http://127.0.0.1:9', token: server.token });
    const unreachable = await gone.projects.list.query().catch((e: unknown) => e);
    expect(unreachable).toMatchObject({ name: 'SlipwayError', code: 'network_error', status: 0 });
    // A subscription ends at its signal too.
    const controller = new AbortController();
    const { project } = await client.projects.create.mutate({ name: 'Signals' });
    const { service } = await client.services.create.mutate({ projectId: project.id, name: 'web', repoFullName: 'acme/web' });
    const { deployment } = await client.deployments.create.mutate({ serviceId: service.id });
    const first = await new Promise<string>((resolve, reject) => {
      client.deployments.stream.subscribe(
        { deploymentId: deployment.id },
        {
          signal: controller.signal,
          onData: (e) => {
            resolve((e as unknown as { data: { type: string } }).data.type);
            controller.abort();
          },
          onError: reject,
        },
      );
    });
    expect(first).toBe('snapshot');
  });

  it('streams a deployment log as a subscription, resumable by event id', async () => {
    const client = createClient({ url: server.url, token: server.token });
    const { project } = await client.projects.create.mutate({ name: 'Streams' });
    const { service } = await client.services.create.mutate({ projectId: project.id, name: 'web', repoFullName: 'acme/web' });
    const { deployment } = await client.deployments.create.mutate({ serviceId: service.id });

    const events: Array<{ type: string; id?: string }> = [];
    const done = new Promise<void>((resolve, reject) => {
      const subscription = client.deployments.stream.subscribe(
        { deploymentId: deployment.id },
        {
          onData(envelope) {
            const { id, data } = envelope as unknown as { id: string; data: { type: string } };
            events.push({ type: data.type, id });
            if (data.type === 'snapshot') void client.deployments.abort.mutate({ deploymentId: deployment.id }).catch(reject);
          },
          onError: reject,
          onComplete: () => resolve(),
        },
      );
      setTimeout(() => {
        subscription.unsubscribe();
        resolve();
      }, 10_000);
    });
    await done;
    expect(events[0]).toMatchObject({ type: 'snapshot' });
    const logs = events.filter((e) => e.type === 'log');
    expect(logs.length).toBeGreaterThanOrEqual(1);
    expect(Number(logs[0]!.id)).toBeGreaterThan(Number(events[0]!.id));

    // Resuming after the snapshot's id yields only what came after it.
    const resumed = await new Promise<Array<{ type: string; lines?: unknown[] }>>((resolve, reject) => {
      const seen: Array<{ type: string; lines?: unknown[] }> = [];
      client.deployments.stream.subscribe(
        { deploymentId: deployment.id, lastEventId: events[0]!.id! },
        {
          onData: (e) => seen.push((e as unknown as { data: { type: string; lines?: unknown[] } }).data),
          onError: reject,
          onComplete: () => resolve(seen),
        },
      );
    });
    expect(resumed[0]).toMatchObject({ type: 'snapshot' });
    expect(resumed[0]!.lines).toHaveLength(logs.length);
  });

  it('resumes a stream after a dropped connection from the last event id, losing and repeating nothing', async () => {
    const relay = await startRelay(new URL(server.url));
    try {
      const client = createClient({ url: server.url, token: server.token });
      const throughRelay = createClient({ url: relay.url, token: server.token });
      const { project } = await client.projects.create.mutate({ name: 'Dropped' });
      const { service } = await client.services.create.mutate({ projectId: project.id, name: 'web', repoFullName: 'acme/web' });
      const { deployment } = await client.deployments.create.mutate({ serviceId: service.id });

      const ids: number[] = [];
      let snapshots = 0;
      let firstSnapshot!: () => void;
      const snapshotSeen = new Promise<void>((resolve) => (firstSnapshot = resolve));
      const ended = new Promise<void>((resolve, reject) => {
        throughRelay.deployments.stream.subscribe(
          { deploymentId: deployment.id },
          {
            onData(envelope) {
              const { data } = envelope as unknown as { data: { type: string; lines?: Array<{ id: number }>; line?: { id: number } } };
              if (data.type === 'snapshot') {
                snapshots++;
                ids.push(...data.lines!.map((l) => l.id));
                firstSnapshot();
              } else if (data.type === 'log') ids.push(data.line!.id);
            },
            onError: reject,
            onComplete: () => resolve(),
          },
        );
      });
      await snapshotSeen;
      // The connection drops; the deployment writes its last lines and ends while the client is away.
      relay.dropAll();
      await client.deployments.abort.mutate({ deploymentId: deployment.id });
      await ended;

      const { logs } = await client.deployments.logs.query({ deploymentId: deployment.id });
      expect(logs.length).toBeGreaterThanOrEqual(1);
      expect(ids).toEqual(logs.map((l) => l.id));
      expect(snapshots).toBe(2);
      expect(relay.connections()).toBeGreaterThanOrEqual(2);
    } finally {
      await relay.close();
    }
  });

  it('reports the runtime log stream status when nothing runs', async () => {
    const client = createClient({ url: server.url, token: server.token });
    const { project } = await client.projects.create.mutate({ name: 'Runtime' });
    const { service } = await client.services.create.mutate({ projectId: project.id, name: 'web', repoFullName: 'acme/web' });
    const seen = await new Promise<Array<{ type: string; closed?: boolean }>>((resolve, reject) => {
      const events: Array<{ type: string; closed?: boolean }> = [];
      client.deployments.runtimeLogs.subscribe(
        { serviceId: service.id },
        { onData: (e) => events.push(e as { type: string; closed?: boolean }), onError: reject, onComplete: () => resolve(events) },
      );
    });
    expect(seen.map((e) => e.type)).toEqual(['snapshot', 'status']);
    expect(seen[1]).toMatchObject({ ok: false, closed: true });
  });
});

/** A TCP relay in front of the server whose connections the test can cut, as a flaky network would. */
async function startRelay(target: URL): Promise<{ url: string; connections(): number; dropAll(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let count = 0;
  const relay: Server = createServer((downstream) => {
    count++;
    const upstream = connect(Number(target.port), target.hostname);
    for (const [a, b] of [
      [downstream, upstream],
      [upstream, downstream],
    ] as const) {
      sockets.add(a);
      a.on('error', () => b.destroy());
      a.on('close', () => {
        sockets.delete(a);
        b.destroy();
      });
      a.pipe(b);
    }
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const { port } = relay.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    connections: () => count,
    dropAll: () => {
      for (const socket of sockets) socket.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        relay.close(() => resolve());
      }),
  };
}
