import { describe, expect, it } from 'vitest';
import { DEFAULT_DOCKER_SOCKET, ensureEngine, findProvisionScript, type EngineSetupDeps } from '../../adapters/docker/engine-setup.js';

/** What `npm start` does about a missing Docker engine, decided with fakes of the host. */
function host(overrides: Partial<EngineSetupDeps> & { engineUp?: boolean; provisionWorks?: boolean } = {}) {
  let up = overrides.engineUp ?? false;
  const provisioned: string[] = [];
  const logged: string[] = [];
  const deps: EngineSetupDeps = {
    ping: async () => {
      if (!up) throw new Error(`connect ENOENT ${DEFAULT_DOCKER_SOCKET}`);
    },
    isRoot: true,
    isDebian: true,
    inContainer: false,
    provisionScript: '/srv/slipway/scripts/provision/docker.sh',
    provision: async (script) => {
      provisioned.push(script);
      if (overrides.provisionWorks === false) throw new Error('docker.sh ended with exit code 1');
      up = true;
    },
    log: (message) => logged.push(message),
    ...overrides,
  };
  return { deps, provisioned, logged };
}

describe('engine set-up at start', () => {
  it('does nothing when an engine answers', async () => {
    const { deps, provisioned } = host({ engineUp: true });
    expect(await ensureEngine(DEFAULT_DOCKER_SOCKET, deps)).toEqual({ ok: true, provisioned: false });
    expect(provisioned).toEqual([]);
  });

  it('as root on Debian, installs and starts one with the shared provisioning script', async () => {
    const { deps, provisioned, logged } = host();
    expect(await ensureEngine(DEFAULT_DOCKER_SOCKET, deps)).toEqual({ ok: true, provisioned: true });
    expect(provisioned).toEqual(['/srv/slipway/scripts/provision/docker.sh']);
    expect(logged).toEqual(['no Docker engine answers; installing and starting one', 'Docker engine ready']);
  });

  it('says in one line when provisioning failed', async () => {
    const { deps } = host({ provisionWorks: false });
    const result = await ensureEngine(DEFAULT_DOCKER_SOCKET, deps);
    expect(result.ok).toBe(false);
    if (!result.ok)
      expect(result.line).toMatch(
        /^slipway: no Docker engine at \/var\/run\/docker\.sock, and starting one failed \(docker\.sh ended with exit code 1\); .*apt-get install docker\.io/,
      );
  });

  const refusals: Array<[string, Partial<EngineSetupDeps>, string, RegExp]> = [
    ['not root', { isRoot: false }, DEFAULT_DOCKER_SOCKET, /run npm start as root .* sudo apt-get install docker\.io/],
    [
      'not Debian',
      { isDebian: false, isRoot: true },
      DEFAULT_DOCKER_SOCKET,
      /install Docker Engine \(https:\/\/docs\.docker\.com\/engine\/install\/\)/,
    ],
    ['in a container', { inContainer: true }, DEFAULT_DOCKER_SOCKET, /mount the host's socket/],
    ['another socket', {}, '/tmp/other.sock', /start the engine behind DOCKER_SOCKET=\/tmp\/other\.sock/],
  ];
  for (const [what, overrides, socket, how] of refusals) {
    it(`refuses with one line saying what is missing and how to get it: ${what}`, async () => {
      const { deps, provisioned } = host(overrides);
      const result = await ensureEngine(socket, deps);
      expect(provisioned).toEqual([]);
      expect(result.ok).toBe(false);
      if (result.ok) return;
      expect(result.line).not.toContain('\n');
      expect(result.line).toMatch(/^slipway: no Docker engine answers at \S+ \(connect ENOENT/);
      expect(result.line).toMatch(how);
    });
  }

  it('finds the provisioning script from the source tree', () => {
    expect(findProvisionScript()).toMatch(/scripts\/provision\/docker\.sh$/);
  });
});
