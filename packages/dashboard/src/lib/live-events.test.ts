import { describe, expect, it } from 'vitest';
import { eventOf, LIVE_FALLBACK_MS, pollEvery, staleAfter } from './live-events';

describe('live updates from the event stream', () => {
  it('reads the event inside a tracked item, and ignores pings and anything else', () => {
    const event = { id: 'evt_1', seq: 7, type: 'deployment.succeeded', projectId: 'prj_1', occurredAt: '', data: {} };
    expect(eventOf({ id: '7', data: { type: 'event', event } })).toEqual({ type: 'deployment.succeeded', projectId: 'prj_1' });
    expect(eventOf({ type: 'event', event: { ...event, projectId: null } })).toEqual({ type: 'deployment.succeeded', projectId: null });
    expect(eventOf({ type: 'ping', t: 1 })).toBeNull();
    expect(eventOf(null)).toBeNull();
    expect(eventOf({ data: { type: 'event', event: {} } })).toBeNull();
  });

  it('refetches what each event changes: a deployment its service, deployments and projects; a server the servers', () => {
    const paths = (type: string) => staleAfter(type).map((p) => p.join('.'));
    expect(paths('deployment.started')).toEqual(
      expect.arrayContaining(['services.overview', 'deployments.list', 'deployments.get', 'projects.bySlug']),
    );
    expect(paths('service.crash_looping')).toContain('services.overview');
    expect(paths('database.stopped_unexpectedly')).toContain('services.overview');
    expect(paths('backup.succeeded')).toEqual(['backups.list']);
    expect(paths('server.down')).toEqual(['servers.list', 'servers.get']);
    expect(paths('host.disk_high')).toEqual([]);
  });

  it('polls only as a safety net while the stream is up', () => {
    expect(pollEvery(false, 3_000)).toBe(3_000);
    expect(pollEvery(true, 3_000)).toBe(LIVE_FALLBACK_MS);
    expect(pollEvery(true, 60_000)).toBe(60_000);
  });
});
