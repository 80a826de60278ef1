import { randomBytes } from 'node:crypto';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerPreviewNetworks } from '../../adapters/docker/docker.preview-networks.js';
import type { ServiceRecord } from '../../src/domain/types.js';
import { docker, provisionDocker } from '../helpers/docker.js';

/**
 * previews.databases `shared` against the real engine: the parent database's running container joins the
 * preview environment's network under its slug, so the preview's services reach the parent's database by the
 * name their references resolve to (test/integration/preview-lifecycle.test.ts shows the references resolve
 * to the parent's credentials); closing the preview takes it off that network again.
 */
const run = randomBytes(4).toString('hex');
const instanceId = `e2e-prevnet-${run}`;
const prefix = `slipway-e2e-${run}`;
const environmentId = `env${run}`;
const PARENT = `slipway-e2e-prevnet-db-${run}`;
const database = { id: `svc${run}`, slug: 'db', projectId: `prj${run}` } as ServiceRecord;
const previewNetwork = `${prefix}-${environmentId}`;

beforeAll(async () => {
  await provisionDocker({ images: 'busybox' });
  // The parent database as the runtime labels it, answering on 8080 from its own (parent) network only.
  await docker(
    'run',
    '-d',
    '--name',
    PARENT,
    '--label',
    `slipway.instance=${instanceId}`,
    '--label',
    `slipway.service=${database.id}`,
    '--label',
    'slipway.test=preview-networks',
    'busybox:latest',
    'sh',
    '-c',
    'mkdir -p /w && echo parent-db > /w/index.html && exec httpd -f -p 8080 -h /w',
  );
}, 5 * 60_000);

afterAll(async () => {
  await docker('rm', '-f', PARENT).catch(() => undefined);
  await docker('network', 'rm', previewNetwork).catch(() => undefined);
});

/**
 * A throwaway container on the preview network asking for `db:8080`; its output, or the failure. The name is
 * resolved with nslookup (the engine's DNS) and asked with nc: the stand-in busybox-static's wget crashes.
 */
async function fromPreview(): Promise<string> {
  const script =
    'ip=$(nslookup db 2>/dev/null | awk \'/^Address: /{print $2}\' | tail -1); [ -n "$ip" ] && printf \'GET / HTTP/1.0\\r\\n\\r\\n\' | nc -w 5 "$ip" 8080 | tail -1';
  return docker('run', '--rm', '--network', previewNetwork, 'busybox:latest', 'sh', '-c', script).catch(
    (error: Error) => `failed: ${error.message}`,
  );
}

describe('DockerPreviewNetworks against the engine', () => {
  it("joins the parent database to the preview's network under its slug, idempotently, and takes it off at close", async () => {
    const networks = new DockerPreviewNetworks(new Docker(), { instanceId, prefix });
    await networks.link(database, environmentId);
    // A second pass (the preview loop relinks after a parent redeploy) changes nothing and does not fail.
    await networks.link(database, environmentId);
    const labels = JSON.parse(await docker('network', 'inspect', '--format', '{{json .Labels}}', previewNetwork)) as Record<string, string>;
    expect(labels).toMatchObject({
      'slipway.instance': instanceId,
      'slipway.environment': environmentId,
      'slipway.project': database.projectId,
    });
    expect((await fromPreview()).trim()).toBe('parent-db');

    await networks.unlink(database, environmentId);
    expect(await fromPreview()).toMatch(/^failed/);
  }, 120_000);
});
