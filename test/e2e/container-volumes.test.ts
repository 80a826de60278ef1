import { randomBytes } from 'node:crypto';
import Docker from 'dockerode';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DockerodeContainerEngine } from '../../adapters/docker/dockerode.container-engine.js';
import { provisionDocker } from '../helpers/docker.js';

/**
 * What removing a container leaves on the engine: redis:7 declares VOLUME /data, so a container of it that
 * mounts nothing there gets an anonymous volume, made for that container alone and never mounted again.
 * A replaced container must take it along (each redeploy or restart of such an image left one behind),
 * while a named volume the platform mounts (a database's data) stays for the next container.
 */
const docker = new Docker();
const engine = new DockerodeContainerEngine(docker);
const tag = randomBytes(3).toString('hex');
const named = `slipway-test-keep-${tag}`;
const name = `slipway-test-volumes-${tag}`;

beforeAll(async () => {
  await provisionDocker({ images: 'redis' });
});

afterAll(async () => {
  await docker
    .getContainer(name)
    .remove({ force: true, v: true })
    .catch(() => {});
  await docker
    .getVolume(named)
    .remove()
    .catch(() => {});
});

it('removes a container with its anonymous volume and keeps the named volume it mounted', async () => {
  const started = await engine.runContainer({
    name,
    image: 'redis:7',
    env: {},
    cmd: null,
    labels: { 'slipway.test': tag },
    network: 'bridge',
    aliases: [],
    volumes: [{ name: named, target: '/kept' }],
    signal: AbortSignal.timeout(30_000),
  });
  const mounts = (await docker.getContainer(started.id).inspect()).Mounts;
  const anonymous = mounts.find((m) => m.Destination === '/data')?.Name;
  expect(anonymous, JSON.stringify(mounts)).toMatch(/^[0-9a-f]{64}$/);
  expect(mounts.find((m) => m.Destination === '/kept')?.Name).toBe(named);

  await engine.stopAndRemove(name, 1);

  expect(await engine.inspect(name)).toBeNull();
  const volumes = (await docker.listVolumes()).Volumes.map((v) => v.Name);
  expect(volumes).not.toContain(anonymous);
  expect(volumes).toContain(named);
});
