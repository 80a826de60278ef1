import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const DEFAULT_DOCKER_SOCKET = '/var/run/docker.sock';
/** apt-get install docker.io and dockerd's first start. */
const PROVISION_TIMEOUT_MS = 10 * 60_000;

export interface EngineSetupDeps {
  /** Rejects with the reason when no engine answers (with a timeout of its own). */
  ping(): Promise<void>;
  isRoot: boolean;
  isDebian: boolean;
  /** In a container the engine it starts runs inside that container (mounting the host's socket is the other way). */
  inContainer: boolean;
  /** Of the capabilities dockerd needs (mounts, cgroups, its packet filter), those this process lacks. */
  missingCapabilities: string[];
  /** scripts/provision/docker.sh, when this install has it. */
  provisionScript: string | null;
  /** Runs the script; rejects when it fails. */
  provision(script: string): Promise<void>;
  log(message: string, extra?: Record<string, unknown>): void;
  /** One plain line for the person at the terminal. */
  say(line: string): void;
}

export type EngineSetup = { ok: true; provisioned: boolean } | { ok: false; line: string };

const DOCKERD_LOG = '/tmp/slipway-dockerd.log';
const MOUNT_HOST_SOCKET = `-v ${DEFAULT_DOCKER_SOCKET}:${DEFAULT_DOCKER_SOCKET}`;

/**
 * What `npm start` does about the Docker engine before anything else: nothing when one answers;
 * installs and starts one when it runs as root on Debian on the default socket (the provisioning the
 * tests use), in a container too, where the engine then runs inside that container; otherwise one
 * line saying why it cannot and how to get one.
 */
export async function ensureEngine(socket: string, deps: EngineSetupDeps): Promise<EngineSetup> {
  const first = await reason(deps.ping);
  if (first === null) return { ok: true, provisioned: false };
  const refusal = whyNotStarted(socket, deps);
  if (refusal !== null) return { ok: false, line: `slipway: no Docker engine answers at ${socket} (${oneLine(first)}): ${refusal}.` };
  const script = deps.provisionScript!;
  deps.say(
    deps.inContainer
      ? `slipway: no Docker engine answers at ${socket}: starting one inside this container (${script}; dockerd logs to ${DOCKERD_LOG}); mounting the host's socket (${MOUNT_HOST_SOCKET}) uses the host's engine instead.`
      : `slipway: no Docker engine answers at ${socket}: installing and starting one (${script}; dockerd logs to ${DOCKERD_LOG}).`,
  );
  deps.log('no Docker engine answers; installing and starting one', { socket, reason: first, script, inContainer: deps.inContainer });
  const failed = await deps.provision(script).then(
    () => null,
    (error: unknown) => (error instanceof Error ? error.message : String(error)),
  );
  const after = failed ?? (await reason(deps.ping));
  if (after === null) {
    deps.log('Docker engine ready');
    return { ok: true, provisioned: true };
  }
  return {
    ok: false,
    line: deps.inContainer
      ? `slipway: no Docker engine at ${socket}, and starting one inside this container failed (${oneLine(after)}); see ${DOCKERD_LOG}, or mount the host's socket into this container (${MOUNT_HOST_SOCKET}).`
      : `slipway: no Docker engine at ${socket}, and starting one failed (${oneLine(after)}); see ${DOCKERD_LOG}, or install Docker yourself (apt-get install docker.io) and start it.`,
  };
}

/** Null when an engine can be started here; otherwise why not and what to do instead. */
function whyNotStarted(socket: string, deps: EngineSetupDeps): string | null {
  if (socket !== DEFAULT_DOCKER_SOCKET) return `start the engine behind DOCKER_SOCKET=${socket}, or unset DOCKER_SOCKET`;
  const orMount = deps.inContainer ? `, or mount the host's socket into this container (${MOUNT_HOST_SOCKET})` : '';
  if (!deps.isDebian)
    return `install Docker Engine (https://docs.docker.com/engine/install/) and start it, or set DOCKER_SOCKET to a running engine${orMount}`;
  if (!deps.isRoot)
    return deps.inContainer
      ? `run npm start as root to have one started inside this container, or mount the host's socket into it (${MOUNT_HOST_SOCKET})`
      : 'run npm start as root to have it installed and started, or install it yourself: sudo apt-get install docker.io && sudo systemctl start docker';
  if (deps.provisionScript === null)
    return deps.inContainer
      ? `this install has no scripts/provision/docker.sh to start one: mount the host's socket into this container (${MOUNT_HOST_SOCKET})`
      : 'this install has no scripts/provision/docker.sh to start one: install Docker yourself (apt-get install docker.io) and start it';
  if (deps.inContainer && deps.missingCapabilities.length > 0)
    return `this container cannot run one: it lacks ${deps.missingCapabilities.join(', ')}, which dockerd needs: mount the host's socket (${MOUNT_HOST_SOCKET}), or give the container those capabilities (--privileged)`;
  return null;
}

async function reason(ping: () => Promise<void>): Promise<string | null> {
  try {
    await ping();
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim().slice(0, 300);

/** scripts/provision/docker.sh above this module: it runs from adapters/docker (tsx) or dist/adapters/http (bundle). */
export function findProvisionScript(from = path.dirname(fileURLToPath(import.meta.url))): string | null {
  let dir = from;
  for (let i = 0; i < 5; i++) {
    const candidate = path.join(dir, 'scripts', 'provision', 'docker.sh');
    if (existsSync(candidate)) return candidate;
    dir = path.dirname(dir);
  }
  return null;
}

/**
 * Runs the provisioning script with bash (argv, no shell string), its output on our stderr. In a
 * session of its own: the dockerd it starts must not get the Ctrl-C meant for the platform.
 */
export function runProvisionScript(script: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [script], {
      stdio: ['ignore', 'inherit', 'inherit'],
      detached: true,
      timeout: PROVISION_TIMEOUT_MS,
      killSignal: 'SIGKILL',
    });
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${path.basename(script)} ended with ${signal ?? `exit code ${code}`}`)),
    );
  });
}

/** dockerd mounts (overlay, its containers' filesystems) and writes cgroups: CAP_SYS_ADMIN; its networks and packet filter: CAP_NET_ADMIN. */
const ENGINE_CAPABILITIES: Array<[name: string, bit: bigint]> = [
  ['CAP_SYS_ADMIN', 21n],
  ['CAP_NET_ADMIN', 12n],
];

/** Those of dockerd's capabilities the effective set in a /proc/<pid>/status text lacks; none when it cannot be read. */
export function missingEngineCapabilities(status: string): string[] {
  const hex = /^CapEff:\s*([0-9a-f]+)\s*$/im.exec(status)?.[1];
  if (hex === undefined) return [];
  const effective = BigInt(`0x${hex}`);
  return ENGINE_CAPABILITIES.filter(([, bit]) => ((effective >> bit) & 1n) === 0n).map(([name]) => name);
}

export function hostFacts(): Pick<EngineSetupDeps, 'isRoot' | 'isDebian' | 'inContainer' | 'missingCapabilities'> {
  let status = '';
  try {
    status = readFileSync('/proc/self/status', 'utf8');
  } catch {
    // not Linux, or no /proc: nothing is claimed missing
  }
  return {
    isRoot: process.getuid?.() === 0,
    isDebian: existsSync('/etc/debian_version'),
    inContainer: existsSync('/.dockerenv') || existsSync('/run/.containerenv'),
    missingCapabilities: missingEngineCapabilities(status),
  };
}
