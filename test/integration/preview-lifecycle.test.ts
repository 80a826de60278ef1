import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { GitHubProvider } from '../../adapters/git/github.git-provider.js';
import { CopyRefused, type DatabaseCopy } from '../../src/backups/database-copy.js';
import type { DatabaseDump } from '../../src/backups/database-dump.port.js';
import { DEFAULT_PLATFORM_CONFIG } from '../../src/index.js';
import type { Clock } from '../../src/platform/clock.port.js';
import type { PreviewNetworks } from '../../src/previews/preview-networks.port.js';
import { githubDelivery } from '../helpers/git-host-standins.js';
import { createHarness, type Harness } from '../helpers/harness.js';

/**
 * Previews' limits and lifetime with the ports faked: a database copy refused for its size (a backup's,
 * or a fresh dump's as it streams) or for the disk, the preview failed with why; a copy that fits fills
 * the preview's database; ttlHours without a push tears the preview down.
 */

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/webhooks');
const pr = JSON.parse(readFileSync(path.join(FIXTURES, 'github-pull-request.json'), 'utf8')) as Record<string, any>;
const REPO = 'https://github.com/Codertocat/Hello-World.git';

let h: Harness | null = null;
afterEach(async () => {
  await h?.services.statuses.stop();
  await h?.services.poller.stop();
  await h?.services.previews.stop();
  await h?.close();
  h = null;
});

/** A dump port whose dumps are `dumpBytes` long and whose restores are recorded. */
function fakeDump(dumpBytes: () => number) {
  const restored: Array<{ containerId: string; bytes: number }> = [];
  const dump: DatabaseDump = {
    formatOf: () => 'custom',
    async dump() {
      const size = dumpBytes();
      const stream = Readable.from(
        (function* () {
          for (let sent = 0; sent < size; sent += 256) yield Buffer.alloc(Math.min(256, size - sent), 7);
        })(),
      );
      return { stream, done: new Promise((resolve) => stream.once('end', () => resolve())) };
    },
    async restore(target, input) {
      let bytes = 0;
      for await (const chunk of input) bytes += (chunk as Buffer).length;
      restored.push({ containerId: target.containerId, bytes });
    },
  };
  return { dump, restored };
}

async function setUp(opts: {
  maxBytes: number;
  dumpBytes: number;
  clock?: Clock;
  disk?: { totalBytes: number; freeBytes: number };
  databases?: 'copy' | 'shared';
  networks?: PreviewNetworks;
}) {
  const { dump, restored } = fakeDump(() => opts.dumpBytes);
  h = await createHarness({
    ...(opts.clock ? { clock: opts.clock } : {}),
    config: {
      rootDomain: 'apps.test',
      hooks: { ...DEFAULT_PLATFORM_CONFIG.hooks, tickMs: 100, previewCopyMaxBytes: opts.maxBytes },
    },
    backups: { dump, locate: async (service) => ({ containerId: `container-${service.id}` }) },
    hooks: {
      providers: [new GitHubProvider()],
      ...(opts.disk ? { disk: async () => opts.disk! } : {}),
      ...(opts.networks ? { networks: opts.networks } : {}),
    },
  });
  const api = h.caller();
  const { project } = await api.projects.create({ name: 'Previews' });
  const { service: db } = await api.services.create({
    projectId: project.id,
    name: 'db',
    repoUrl: 'database',
    repoFullName: 'database:postgres',
  });
  const { service: web } = await api.services.create({ projectId: project.id, name: 'web', repoFullName: null, repoUrl: REPO });
  await api.env.set({ serviceId: web.id, key: 'DB_PASSWORD', value: '${db.POSTGRES_PASSWORD}' });
  await api.services.update({ serviceId: web.id, previews: { enabled: true, databases: opts.databases ?? 'copy', ttlHours: 2 } });
  const secret = (await api.webhooks.createOrRotate({ projectId: project.id })).webhook.secret;
  return { api, project, db, web, secret, restored, harness: h };
}

/** Opens the PR, then lets the preview's database deployment "go live" and runs a provisioning pass. */
async function openAndFill(ctx: Awaited<ReturnType<typeof setUp>>) {
  const { harness, project, secret } = ctx;
  const answer = await harness.services.deliveries.receive(project.id, {
    headers: Object.fromEntries(Object.entries(githubDelivery('pull_request', pr, secret).headers)),
    body: Buffer.from(githubDelivery('pull_request', pr, secret).body),
    receivedAt: new Date(),
  });
  expect(answer).toMatchObject({ status: 202 });
  let [preview] = (await ctx.api.webhooks.previews({ projectId: project.id })).previews;
  expect(preview).toMatchObject({ status: 'deploying', phase: 'databases' });
  const copyId = preview!.databases[0]!.previewServiceId!;
  const [deployment] = (await ctx.api.deployments.list({ serviceId: copyId })).deployments;
  await harness.database.store.deployments.update(deployment!.id, { status: 'succeeded', finishedAt: new Date() });
  await harness.services.previews.pass();
  [preview] = (await ctx.api.webhooks.previews({ projectId: project.id })).previews;
  return { preview: preview!, copyId };
}

describe('a preview database copy', () => {
  it('fills the copy from a fresh dump when the parent has no backup, and moves on to the services', async () => {
    const ctx = await setUp({ maxBytes: 10_000, dumpBytes: 3_000 });
    const { preview, copyId } = await openAndFill(ctx);
    expect(preview.databases[0]).toMatchObject({ mode: 'copy', filledFrom: 'a fresh dump' });
    expect(preview).toMatchObject({ status: 'deploying', phase: 'services' });
    expect(ctx.restored).toEqual([{ containerId: `container-${copyId}`, bytes: 3_000 }]);
    // The copy has its own password, and the preview's web resolves its reference to it.
    const parentPw = (await ctx.harness.envValues(ctx.db.id)).POSTGRES_PASSWORD;
    const copyPw = (await ctx.harness.envValues(copyId)).POSTGRES_PASSWORD;
    expect(copyPw).toBeTruthy();
    expect(copyPw).not.toBe(parentPw);
  });

  it('refuses a fresh dump past the size limit as it streams: the preview fails saying why', async () => {
    const ctx = await setUp({ maxBytes: 1_000, dumpBytes: 50_000 });
    const { preview } = await openAndFill(ctx);
    expect(preview.status).toBe('failed');
    expect(preview.statusReason).toContain('passed the 1000-byte limit');
  });

  it('refuses a backup over the limit before reading it, and a copy that would fill the disk past 90%', async () => {
    const ctx = await setUp({ maxBytes: 1_000, dumpBytes: 10 });
    await ctx.harness.database.store.backups.insert({
      id: 'b'.repeat(16),
      serviceId: ctx.db.id,
      engine: 'postgres',
      status: 'succeeded',
      trigger: 'manual',
      storage: 'disk',
      format: 'custom',
      localPath: 'x',
      objectKey: null,
      storageId: null,
      sizeBytes: 5_000,
      checksum: 'sha256:00',
      error: null,
      abortRequested: false,
      createdAt: new Date(),
      startedAt: new Date(),
      finishedAt: new Date(),
      scheduleId: null,
      kind: 'dump',
      volume: null,
      volumeMode: null,
      walStart: null,
      counts: null,
      drill: null,
    });
    const { preview, copyId } = await openAndFill(ctx);
    expect(preview.status).toBe('failed');
    expect(preview.statusReason).toMatch(/newest backup is 5000 bytes, over the 1000-byte limit/);
    expect(ctx.restored).toEqual([]);

    const copy = (ctx.harness.services.previews as unknown as { databases: { copy: DatabaseCopy } }).databases.copy;
    const disk = async () => ({ totalBytes: 1_000_000, freeBytes: 50_000 });
    const store = ctx.harness.database.store;
    const [parent, target] = [(await store.projects.getService(ctx.db.id))!, (await store.projects.getService(copyId))!];
    const refused = await copy
      .copy(parent, target, { maxBytes: 10_000_000, maxUsedRatio: 0.9, disk }, AbortSignal.timeout(10_000), () => {})
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(CopyRefused);
    expect((refused as Error).message).toMatch(/past the 90%/);
  });
});

describe("a preview sharing its parent's database (previews.databases shared)", () => {
  it('makes no copy, resolves references to the parent database, joins it to the preview network and takes it off at close', async () => {
    const calls: string[] = [];
    const networks: PreviewNetworks = {
      link: async (database, environmentId) => void calls.push(`link ${database.slug} ${environmentId}`),
      unlink: async (database, environmentId) => void calls.push(`unlink ${database.slug} ${environmentId}`),
    };
    const ctx = await setUp({ maxBytes: 10_000, dumpBytes: 3_000, databases: 'shared', networks });
    const { harness, project, secret, api } = ctx;
    const open = githubDelivery('pull_request', pr, secret);
    const opened = await harness.services.deliveries.receive(project.id, {
      headers: open.headers,
      body: Buffer.from(open.body),
      receivedAt: new Date(),
    });
    expect(opened).toMatchObject({ status: 202 });
    await harness.services.previews.pass();
    const [preview] = (await api.webhooks.previews({ projectId: project.id })).previews;
    expect(preview!.databases).toEqual([expect.objectContaining({ parentServiceId: ctx.db.id, mode: 'shared', previewServiceId: null })]);
    // Nothing was dumped or restored, and the preview environment holds the web copy only: no database service of its own.
    expect(ctx.restored).toEqual([]);
    const previewServices = await harness.database.store.projects.listServicesIn([preview!.environmentId!]);
    expect(previewServices.map((s) => s.slug)).toEqual(['web']);
    // The preview's web resolves ${db.POSTGRES_PASSWORD} to the parent's own password, reached under the parent's slug.
    const resolved = (await harness.services.env.resolvedFor(previewServices[0]!)).env;
    expect(resolved.DB_PASSWORD).toBe((await harness.envValues(ctx.db.id)).POSTGRES_PASSWORD);
    expect(calls).toEqual([`link db ${preview!.environmentId}`]);

    const closed = { ...pr, action: 'closed', pull_request: { ...pr.pull_request, state: 'closed' } };
    const close = githubDelivery('pull_request', closed, secret, 'close-1');
    expect(
      await harness.services.deliveries.receive(project.id, {
        headers: close.headers,
        body: Buffer.from(close.body),
        receivedAt: new Date(),
      }),
    ).toMatchObject({
      status: 202,
    });
    expect(calls).toEqual([`link db ${preview!.environmentId}`, `unlink db ${preview!.environmentId}`]);
    expect((await api.webhooks.previews({ projectId: project.id })).previews).toEqual([]);
    // The parent database stays, with its password.
    expect((await harness.envValues(ctx.db.id)).POSTGRES_PASSWORD).toBeTruthy();
  });
});

describe('a preview without a push for ttlHours', () => {
  it('is torn down with its environment', async () => {
    let now = Date.parse('2026-11-28T10:00:00Z');
    const clock: Clock = { now: () => new Date((now += 1)) };
    const ctx = await setUp({ maxBytes: 10_000, dumpBytes: 100, clock });
    await openAndFill(ctx);
    expect((await ctx.api.environments.list({ projectId: ctx.project.id })).environments).toHaveLength(2);
    now += 60 * 60_000;
    await ctx.harness.services.previews.pass();
    expect((await ctx.api.webhooks.previews({ projectId: ctx.project.id })).previews).toHaveLength(1);
    now += 61 * 60_000;
    await ctx.harness.services.previews.pass();
    expect((await ctx.api.webhooks.previews({ projectId: ctx.project.id })).previews).toEqual([]);
    expect((await ctx.api.environments.list({ projectId: ctx.project.id })).environments.map((e) => e.name)).toEqual(['production']);
  });
});
