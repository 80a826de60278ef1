import { describe, expect, it } from 'vitest';
import {
  DEFAULT_DOCKER_SOCKET,
  type EngineSetupDeps,
  ensureEngine,
  findProvisionScript,
  missingEngineCapabilities,
} from '../../adapters/docker/engine-setup.js';

/** What `npm start` does about a missing Docker engine, decided with fakes of the host. */
function host(overrides: Partial<EngineSetupDeps> & { engineUp?: boolean; provisionWorks?: boolean } = {}) {
  let up = overrides.engineUp ?? false;
  const provisioned: string[] = [];
  const logged: string[] = [];
  const said: string[] = [];
  const deps: EngineSetupDeps = {
    ping: async () => {
      if (!up) throw new Error(`connect ENOENT ${DEFAULT_DOCKER_SOCKET}`);
    },
    isRoot: true,
    isDebian: true,
    inContainer: false,
    missingCapabilities: [],
    provisionScript: '/srv/slipway/scripts/provision/docker.sh',
    provision: async (script) => {
      provisioned.push(script);
      if (overrides.provisionWorks === false) throw new Error('docker.sh ended with exit code 1');
      up = true;
    },
    log: (message) => logged.push(message),
    say: (line) => said.push(line),
    ...overrides,
  };
  return { deps, provisioned, logged, said };
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

  it('in a container, as root on Debian, starts one inside it and says so on one line', async () => {
    const { deps, provisioned, said } = host({ inContainer: true });
    expect(await ensureEngine(DEFAULT_DOCKER_SOCKET, deps)).toEqual({ ok: true, provisioned: true });
    expect(provisioned).toEqual(['/srv/slipway/scripts/provision/docker.sh']);
    expect(said).toHaveLength(1);
    expect(said[0]).not.toContain('\n');
    expect(said[0]).toMatch(/^slipway: no Docker engine answers at \/var\/run\/docker\.sock: starting one inside this container /);
    expect(said[0]).toMatch(
      /mounting the host's socket \(-v \/var\/run\/docker\.sock:\/var\/run\/docker\.sock\) uses the host's engine instead/,
    );
  });

  it('outside a container, says on one line that it installs and starts one', async () => {
    const { deps, said } = host();
    await ensureEngine(DEFAULT_DOCKER_SOCKET, deps);
    expect(said).toEqual([
      'slipway: no Docker engine answers at /var/run/docker.sock: installing and starting one (/srv/slipway/scripts/provision/docker.sh; dockerd logs to /tmp/slipway-dockerd.log).',
    ]);
  });

  it('in a container, says when starting one failed that the host socket is the other way', async () => {
    const { deps } = host({ inContainer: true, provisionWorks: false });
    const result = await ensureEngine(DEFAULT_DOCKER_SOCKET, deps);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.line).not.toContain('\n');
      expect(result.line).toMatch(/starting one inside this container failed \(docker\.sh ended with exit code 1\)/);
      expect(result.line).toMatch(/mount the host's socket/);
    }
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
    [
      'a container without the capabilities dockerd needs',
      { inContainer: true, missingCapabilities: ['CAP_SYS_ADMIN', 'CAP_NET_ADMIN'] },
      DEFAULT_DOCKER_SOCKET,
      /this container cannot run one: it lacks CAP_SYS_ADMIN, CAP_NET_ADMIN, which dockerd needs: mount the host's socket \(-v \/var\/run\/docker\.sock:\/var\/run\/docker\.sock\), or give the container those capabilities \(--privileged\)/,
    ],
    [
      'a container without the provisioning script (the platform image)',
      { inContainer: true, provisionScript: null },
      DEFAULT_DOCKER_SOCKET,
      /this install has no scripts\/provision\/docker\.sh to start one: mount the host's socket into this container \(-v \/var\/run\/docker\.sock:\/var\/run\/docker\.sock\)/,
    ],
    [
      'a container, not root',
      { inContainer: true, isRoot: false },
      DEFAULT_DOCKER_SOCKET,
      /run npm start as root to have one started inside this container, or mount the host's socket/,
    ],
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

  it('reads the capabilities dockerd needs from /proc/self/status', () => {
    // a privileged container with all but CAP_SYS_RESOURCE; Docker's default set; no capabilities at all
    expect(missingEngineCapabilities('Name:\tnode\nCapEff:\t000001fffeffffff\n')).toEqual([]);
    expect(missingEngineCapabilities('CapEff:\t00000000a80425fb\n')).toEqual(['CAP_SYS_ADMIN', 'CAP_NET_ADMIN']);
    expect(missingEngineCapabilities('CapEff:\t0000000000001000\n')).toEqual(['CAP_SYS_ADMIN']);
    expect(missingEngineCapabilities('CapEff:\t0000000000000000\n')).toEqual(['CAP_SYS_ADMIN', 'CAP_NET_ADMIN']);
    // unreadable: nothing claimed missing (starting one says why if it fails)
    expect(missingEngineCapabilities('')).toEqual([]);
  });

  it('finds the provisioning script from the source tree', () => {
    expect(findProvisionScript()).toMatch(/scripts\/provision\/docker\.sh$/);
  });
});
