import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RegistryHttpImageRegistry } from '../../adapters/registry/registry-http.image-registry.js';
import { freePort } from '../helpers/caddy.js';
import { docker, provisionDocker } from '../helpers/docker.js';

/**
 * Digest polling's adapter against a real Distribution registry (the `registry:2` stand-in built from
 * Debian's docker-registry) on loopback: an image pushed by the real engine, its tag's digest read over the
 * Registry HTTP API as `docker pull` would resolve it, an unknown tag refused.
 */
const NAME = `slipway-e2e-registry-${process.pid}`;
let port: number;
let registry: string;

beforeAll(async () => {
  await provisionDocker({ images: 'busybox,registry' });
  port = await freePort();
  registry = `127.0.0.1:${port}`;
  await docker('run', '-d', '--name', NAME, '--label', 'slipway.test=registry-digest', '-p', `${registry}:5000`, 'registry:2');
  const deadline = Date.now() + 30_000;
  for (;;) {
    const ok = await fetch(`http://${registry}/v2/`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) throw new Error('the registry did not answer');
    await new Promise((r) => setTimeout(r, 200));
  }
}, 10 * 60_000);

afterAll(async () => {
  await docker('rm', '-f', NAME).catch(() => undefined);
  await docker('rmi', `${registry}/slipway/digest:1`).catch(() => undefined);
});

/** Tags busybox into the registry, pushes it, and answers the digest the engine recorded for the push. */
async function pushed(): Promise<string> {
  await docker('tag', 'busybox:latest', `${registry}/slipway/digest:1`);
  await docker('push', `${registry}/slipway/digest:1`);
  const repoDigests = await docker('image', 'inspect', '--format', '{{json .RepoDigests}}', `${registry}/slipway/digest:1`);
  const digest = (JSON.parse(repoDigests) as string[]).find((d) => d.startsWith(`${registry}/slipway/digest@`))?.split('@')[1];
  if (!digest) throw new Error(`no digest in ${repoDigests}`);
  return digest;
}

describe('RegistryHttpImageRegistry against registry:2', () => {
  it('reads the digest a tag points at, and refuses an unknown tag with the registry reason', async () => {
    const digest = await pushed();
    const reader = new RegistryHttpImageRegistry();
    expect(await reader.digestOf(`${registry}/slipway/digest:1`, AbortSignal.timeout(10_000))).toBe(digest);
    const missing = await reader.digestOf(`${registry}/slipway/digest:nope`, AbortSignal.timeout(10_000)).catch((e: Error) => e);
    expect(missing).toBeInstanceOf(Error);
    expect((missing as Error).message).toMatch(/the registry has no such tag/);
  }, 120_000);
});
