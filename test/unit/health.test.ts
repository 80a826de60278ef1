import { afterEach, describe, expect, it } from 'vitest';
import { createRuntimeHarness, type RuntimeHarness } from '../helpers/runtime-fakes.js';

/** GET /api/health's service: each dependency up or down with its reason, cached for a few seconds. */
let h: RuntimeHarness;

afterEach(async () => {
  await h?.close();
});

describe('health', () => {
  it('reports engine, proxy and database up, and status ok', async () => {
    h = await createRuntimeHarness();
    const health = await h.services.health.check();
    expect(health).toMatchObject({ ok: true, status: 'ok', engine: { status: 'up' }, proxy: { status: 'up' }, database: { status: 'up' } });
    expect(new Date(health.checkedAt).toISOString()).toBe(health.checkedAt);
  });

  it('is degraded with the reason when the engine or the proxy is down', async () => {
    h = await createRuntimeHarness();
    h.engine.pingError = 'connect ENOENT /var/run/docker.sock';
    h.proxy.down = 'connect ECONNREFUSED 127.0.0.1:2019';
    const health = await h.services.health.check();
    expect(health.status).toBe('degraded');
    expect(health.engine).toEqual({ status: 'down', detail: 'connect ENOENT /var/run/docker.sock' });
    expect(health.proxy).toEqual({ status: 'down', detail: 'connect ECONNREFUSED 127.0.0.1:2019' });
    expect(health.database.status).toBe('up');
  });

  it('a disabled proxy does not degrade the status', async () => {
    h = await createRuntimeHarness();
    h.proxy.enabled = false;
    const health = await h.services.health.check();
    expect(health).toMatchObject({ status: 'ok', proxy: { status: 'disabled' } });
  });

  it('reuses an answer for a few seconds, and shares one round between concurrent callers', async () => {
    h = await createRuntimeHarness();
    let pings = 0;
    const ping = h.engine.ping.bind(h.engine);
    h.engine.ping = async (signal) => {
      pings++;
      return ping(signal);
    };
    await Promise.all([h.services.health.check(), h.services.health.check(), h.services.health.check()]);
    await h.services.health.check();
    expect(pings).toBe(1);
    expect(h.proxy.checks).toBe(1);
  });

  it('a check that hangs is reported down after its timeout', async () => {
    h = await createRuntimeHarness();
    h.engine.ping = () => new Promise<void>(() => {});
    const started = Date.now();
    const health = await h.services.health.check();
    expect(health.engine).toEqual({ status: 'down', detail: 'no answer within 2000 ms' });
    expect(health.status).toBe('degraded');
    expect(Date.now() - started).toBeLessThan(3_000);
  });
});
