import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { readSse } from '../helpers/sse.js';

/** The documented SSE paths over real HTTP: event names, data shapes, ids, pings, resume. */
let server: ServerProcess;
let call: ReturnType<typeof api>;
let serviceId: string;
beforeAll(async () => {
  server = await startServerProcess({ STREAM_PING_MS: '250' });
  call = api(server.url, server.token);
  const project = (await call('POST', '/api/projects', { name: 'sse' })).json.project;
  serviceId = (await call('POST', `/api/projects/${project.id}/services`, { name: 'web', repoFullName: 'acme/web' })).json.service.id;
});
afterAll(async () => {
  await server?.dispose();
});

describe('deployment log stream', () => {
  it('sends snapshot, pings, live log lines with ids, and ends when the deployment ends', async () => {
    const deployment = (await call('POST', `/api/services/${serviceId}/deployments`)).json.deployment;
    let aborted = false;
    const result = await readSse(`${server.url}/api/deployments/${deployment.id}/stream`, {
      token: server.token,
      until: () => false,
      onFrame: (frame) => {
        if (frame.event === 'ping' && !aborted) {
          aborted = true;
          void call('POST', `/api/deployments/${deployment.id}/abort`);
        }
      },
    });
    expect(result.status).toBe(200);
    expect(result.contentType).toMatch(/^text\/event-stream/);
    expect(result.ended).toBe(true);
    const [snapshot, ...rest] = result.frames;
    expect(snapshot!.event).toBe('snapshot');
    expect(snapshot!.data).toEqual([
      expect.objectContaining({ deploymentId: deployment.id, line: 'Deployment queued for web', stream: 'stdout' }),
    ]);
    const ping = rest.find((f) => f.event === 'ping')!;
    expect(Object.keys(ping.data)).toEqual(['t']);
    expect(Math.abs(ping.data.t - Date.now())).toBeLessThan(60_000);
    const logs = rest.filter((f) => f.event === 'log');
    expect(logs.map((f) => f.data.line)).toEqual(['Deployment aborted before it started']);
    expect(Number(logs[0]!.id)).toBe(logs[0]!.data.id);
    expect(logs[0]!.data.id).toBeGreaterThan(snapshot!.data[0].id);
    expect(Object.keys(logs[0]!.data).sort()).toEqual(['createdAt', 'deploymentId', 'id', 'line', 'stream']);
  });

  it('resumes after Last-Event-ID', async () => {
    const deployment = (await call('POST', `/api/services/${serviceId}/deployments`)).json.deployment;
    await call('POST', `/api/deployments/${deployment.id}/abort`);
    const all = (await call('GET', `/api/deployments/${deployment.id}/logs`)).json.logs;
    expect(all).toHaveLength(2);
    const resumed = await readSse(`${server.url}/api/deployments/${deployment.id}/stream`, {
      token: server.token,
      headers: { 'last-event-id': String(all[0].id) },
      until: () => false,
    });
    expect(resumed.frames[0]!.event).toBe('snapshot');
    expect(resumed.frames[0]!.data.map((l: { id: number }) => l.id)).toEqual([all[1].id]);
  });

  it('answers errors as JSON before streaming', async () => {
    const missing = await call('GET', '/api/deployments/nope/stream');
    expect(missing.status).toBe(404);
    expect(missing.json).toMatchObject({ error: 'not_found' });
    const anonymous = await api(server.url, undefined)('GET', '/api/deployments/nope/stream');
    expect(anonymous.status).toBe(401);
  });
});

describe('runtime log stream', () => {
  it('sends a snapshot then a closed status when no container runs', async () => {
    const result = await readSse(`${server.url}/api/services/${serviceId}/runtime-logs/stream`, {
      token: server.token,
      until: () => false,
    });
    expect(result.status).toBe(200);
    expect(result.frames.map((f) => f.event)).toEqual(['snapshot', 'status']);
    expect(result.frames[0]!.data).toEqual([]);
    expect(result.frames[1]!.data).toMatchObject({ ok: false, closed: true });
  });
});
