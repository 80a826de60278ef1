import { describe, expect, it } from 'vitest';
import { DEFAULT_PLATFORM_CONFIG } from '../../src/index.js';
import { LABELS, type ContainerEngine, type ContainerState } from '../../src/deployments/container-engine.port.js';
import { CurrentContainers } from '../../src/deployments/current-containers.js';
import type { ServiceDeps } from '../../src/platform/deps.js';
import type { TerminalEngine, TerminalProcess } from '../../src/terminals/terminal-engine.port.js';
import { parseTerminalPath, TerminalService, terminalPathOf, type TerminalLimits } from '../../src/terminals/terminal.service.js';
import { admin, freshHarnessPerTest, h, project, reader, rejection, repo, scoped } from '../helpers/unit-harness.js';

freshHarnessPerTest();

const INSTANCE = 'inst0000test';
const signal = new AbortController().signal;

function container(name: string, labels: Record<string, string>, running = true): ContainerState {
  return { id: `${name}-id`, name, running, exitCode: null, ip: null, labels, image: 'busybox:latest' };
}

/** The service with its use case over fakes: containers by name, a service's current container, the commands each container has. */
async function setup(options: { limits?: Partial<TerminalLimits>; commands?: Record<string, string[]> } = {}) {
  let now = Date.parse('2026-01-01T00:00:00.000Z');
  const proj = await project();
  const other = await project('Other');
  const web = await h.services.serviceCreation.create(admin, proj.id, repo('web'));
  const idle = await h.services.serviceCreation.create(admin, proj.id, repo('idle'));
  const own = { [LABELS.instance]: INSTANCE, [LABELS.project]: proj.id, [LABELS.service]: web.id };
  const containers = new Map<string, ContainerState>([
    ['web-1', container('web-1', own)],
    ['stopped', container('stopped', own, false)],
    ['stranger', container('stranger', {})],
    ['elsewhere', container('elsewhere', { ...own, [LABELS.instance]: 'another00000' })],
    ['proxy', container('proxy', { [LABELS.instance]: INSTANCE, [LABELS.role]: 'proxy' })],
  ]);
  const commands = options.commands ?? { 'web-1-id': ['/bin/sh', '/bin/bash'] };
  const terminal: TerminalEngine = {
    async resolveCommand(id, command) {
      const known = commands[id] ?? [];
      return known.find((c) => c === command || c.endsWith(`/${command}`)) ?? null;
    },
    exec: async () => ({}) as TerminalProcess,
  };
  const deps = {
    store: h.database.store,
    clock: { now: () => new Date(now) },
    config: { ...DEFAULT_PLATFORM_CONFIG, instanceId: INSTANCE },
  } as unknown as ServiceDeps;
  // The install's own container lookup (by label) over a fake engine; the current container of a service is given.
  const engine = { inspect: async (ref: string) => containers.get(ref) ?? null } as unknown as ContainerEngine;
  const current = new CurrentContainers(deps, engine);
  current.currentOf = async (s) => (s.id === web.id ? containers.get('web-1')! : null);
  const limits = { idleTimeoutMs: 60_000, maxPerKey: 2, ticketTtlMs: 30_000, ...options.limits };
  const service = new TerminalService(deps, { current, terminal }, limits);
  return { service, proj, other, web, idle, advance: (ms: number) => (now += ms), now: () => now };
}

describe('terminal paths', () => {
  it('parses the two paths of the contract, and nothing else', () => {
    expect(parseTerminalPath('/api/ws/services/abc123/terminal')).toEqual({ kind: 'service', serviceId: 'abc123' });
    expect(parseTerminalPath('/api/ws/terminal/slipway-web_1.2')).toEqual({ kind: 'container', ref: 'slipway-web_1.2' });
    for (const path of [
      '/api/ws/services/ABC/terminal',
      '/api/ws/terminal/',
      '/api/ws/terminal/-x',
      '/api/ws/terminal/a/b',
      '/api/ws/services/x/terminal/',
    ]) {
      expect(parseTerminalPath(path), path).toBeNull();
    }
    expect(terminalPathOf({ kind: 'container', ref: 'c1' })).toBe('/api/ws/terminal/c1');
  });
});

describe('TerminalService', () => {
  it('checks the access level first, then the scope, then whether anything runs', async () => {
    const { service, web, idle, other } = await setup();
    const path = `/api/ws/services/${web.id}/terminal`;
    expect(await rejection(service.issueTicket(reader, path))).toMatchObject({ code: 'forbidden' });
    expect(await rejection(service.prepare(reader, { kind: 'service', serviceId: web.id }, '$(evil)', signal))).toMatchObject({
      code: 'forbidden',
    });
    expect(await rejection(service.issueTicket(scoped(other.id), path))).toMatchObject({ code: 'not_found' });
    expect(await rejection(service.issueTicket(admin, `/api/ws/services/${idle.id}/terminal`))).toMatchObject({ code: 'not_running' });
    expect(await rejection(service.issueTicket(admin, '/api/services'))).toMatchObject({
      code: 'validation_error',
      details: { field: 'target' },
    });
  });

  it('finds only running containers of this install that belong to a project the key sees', async () => {
    const { service, other } = await setup();
    const prepare = (ref: string, actor = admin) => service.prepare(actor, { kind: 'container', ref }, undefined, signal);
    expect(await prepare('web-1')).toMatchObject({ containerId: 'web-1-id', cmd: ['/bin/sh'], keyId: 'admin' });
    for (const ref of ['stranger', 'elsewhere', 'proxy', 'missing'])
      expect(await rejection(prepare(ref)), ref).toMatchObject({ code: 'not_found' });
    expect(await rejection(prepare('web-1', scoped(other.id)))).toMatchObject({ code: 'not_found' });
    expect(await rejection(prepare('stopped'))).toMatchObject({ code: 'not_running' });
  });

  it('runs /bin/sh unless asked for a command the container has', async () => {
    const { service, web } = await setup();
    const target = { kind: 'service' as const, serviceId: web.id };
    expect((await service.prepare(admin, target, 'bash', signal)).cmd).toEqual(['/bin/bash']);
    expect(await rejection(service.prepare(admin, target, 'zsh', signal))).toMatchObject({
      code: 'validation_error',
      details: { field: 'command' },
    });
    expect(await rejection(service.prepare(admin, target, 'sh -c id', signal))).toMatchObject({
      code: 'validation_error',
      details: { field: 'command' },
    });
    const bare = await setup({ commands: {} });
    expect(await rejection(bare.service.prepare(admin, { kind: 'service', serviceId: bare.web.id }, undefined, signal))).toMatchObject({
      code: 'not_running',
      details: { field: 'command' },
    });
  });

  it('a ticket works once, for its own path, within its 30 s, and is held only as a hash', async () => {
    const { service, web, advance, now } = await setup();
    const path = `/api/ws/services/${web.id}/terminal`;
    const { ticket, expiresAt } = await service.issueTicket(admin, path);
    expect(ticket).toMatch(/^wst_[A-Za-z0-9_-]{32}$/);
    expect(Date.parse(expiresAt)).toBe(now() + 30_000);
    expect(JSON.stringify([...(service as unknown as { tickets: Map<string, unknown> }).tickets.keys()])).not.toContain(ticket);
    expect(service.redeemTicket(ticket, path)).toEqual(admin);
    expect(() => service.redeemTicket(ticket, path)).toThrow(expect.objectContaining({ code: 'unauthorized' }));

    const wrongPath = (await service.issueTicket(admin, path)).ticket;
    expect(() => service.redeemTicket(wrongPath, '/api/ws/terminal/web-1')).toThrow(expect.objectContaining({ code: 'unauthorized' }));
    // A ticket tried on the wrong path is spent: it cannot be retried on the right one.
    expect(() => service.redeemTicket(wrongPath, path)).toThrow(expect.objectContaining({ code: 'unauthorized' }));

    const late = (await service.issueTicket(admin, path)).ticket;
    advance(30_000);
    expect(() => service.redeemTicket(late, path)).toThrow(expect.objectContaining({ code: 'unauthorized' }));
  });

  it('bounds the unused tickets a key may hold', async () => {
    const { service, web } = await setup();
    const path = `/api/ws/services/${web.id}/terminal`;
    for (let i = 0; i < 50; i++) await service.issueTicket(admin, path);
    expect(await rejection(service.issueTicket(admin, path))).toMatchObject({ code: 'rate_limited' });
  });

  it('caps open terminals per key; a place is given back once', async () => {
    const { service } = await setup();
    const first = service.acquire('k');
    service.acquire('k');
    expect(() => service.acquire('k')).toThrow(expect.objectContaining({ code: 'rate_limited' }));
    service.acquire('other-key');
    first();
    first();
    service.acquire('k');
    expect(() => service.acquire('k')).toThrow(expect.objectContaining({ code: 'rate_limited' }));
  });
});
