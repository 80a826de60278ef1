import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
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
  /** In a container, installing an engine is never the answer: the host's socket is to be mounted. */
  inContainer: boolean;
  /** scripts/provision/docker.sh, when this install has it. */
  provisionScript: string | null;
  /** Runs the script; rejects when it fails. */
  provision(script: string): Promise<void>;
  log(message: string, extra?: Record<string, unknown>): void;
}

export type EngineSetup = { ok: true; provisioned: boolean } | { ok: false; line: string };

/**
 * What `npm start` does about the Docker engine before anything else: nothing when one answers;
 * installs and starts one when it runs as root on Debian on the default socket (the provisioning the
 * tests use); otherwise one line saying what is missing and how to get it.
 */
export async function ensureEngine(socket: string, deps: EngineSetupDeps): Promise<EngineSetup> {
  const first = await reason(deps.ping);
  if (first === null) return { ok: true, provisioned: false };
  const canProvision =
    deps.isRoot && deps.isDebian && !deps.inContainer && socket === DEFAULT_DOCKER_SOCKET && deps.provisionScript !== null;
  if (canProvision) {
    deps.log('no Docker engine answers; installing and starting one', { socket, reason: first, script: deps.provisionScript });
    const failed = await deps.provision(deps.provisionScript!).then(
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
      line: `slipway: no Docker engine at ${socket}, and starting one failed (${oneLine(after)}); see /tmp/slipway-dockerd.log, or install Docker yourself (apt-get install docker.io) and start it.`,
    };
  }
  const how =
    socket !== DEFAULT_DOCKER_SOCKET
      ? `start the engine behind DOCKER_SOCKET=${socket}, or unset DOCKER_SOCKET`
      : deps.inContainer
        ? `mount the host's socket into this container (-v /var/run/docker.sock:/var/run/docker.sock)`
        : deps.isDebian && !deps.isRoot
          ? 'run npm start as root to have it installed and started, or install it yourself: sudo apt-get install docker.io && sudo systemctl start docker'
          : 'install Docker Engine (https://docs.docker.com/engine/install/) and start it, or set DOCKER_SOCKET to a running engine';
  return { ok: false, line: `slipway: no Docker engine answers at ${socket} (${oneLine(first)}): ${how}.` };
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

export function hostFacts(): Pick<EngineSetupDeps, 'isRoot' | 'isDebian' | 'inContainer'> {
  return {
    isRoot: process.getuid?.() === 0,
    isDebian: existsSync('/etc/debian_version'),
    inContainer: existsSync('/.dockerenv') || existsSync('/run/.containerenv'),
  };
}
