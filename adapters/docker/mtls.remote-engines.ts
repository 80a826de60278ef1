import { Docker } from './dockerode.js';
import type { NodeCredentials, RemoteEngine, RemoteEngineFactory } from '../../src/cluster/node-engines.port.js';
import { DockerodeContainerEngine } from './dockerode.container-engine.js';

const CALL_TIMEOUT_MS = 15_000;

/**
 * Nodes' engines over mutual TLS (docs/cluster-findings.md, item 4): each engine listens on
 * `tcp://<its address>:2376` with `--tlsverify` and a server certificate from the install's CA; the
 * platform presents its client certificate from the same CA. No SSH, no shell string, no socket
 * without client authentication; dockerode drives it exactly as it drives the local socket.
 */
export class MtlsRemoteEngines implements RemoteEngineFactory {
  connect(address: string, port: number, credentials: NodeCredentials): RemoteEngine {
    const docker = mtlsDocker(address, port, credentials);
    return {
      engine: new DockerodeContainerEngine(docker),
      async version(signal) {
        const version = (await (docker as unknown as { version(options: object): Promise<{ Version?: string }> }).version({
          abortSignal: timeout(signal),
        })) as { Version?: string };
        return version.Version ?? '';
      },
      async leaveSwarm(signal) {
        try {
          await docker.swarmLeave({ _query: { force: true }, _body: {}, abortSignal: timeout(signal) } as object);
        } catch (error) {
          // Not in a swarm (any more): what was asked for.
          if ((error as { statusCode?: number }).statusCode !== 503 && !/not part of a swarm/i.test((error as Error).message)) throw error;
        }
      },
      close() {
        // dockerode keeps no connection open between calls (no keep-alive agent is given).
      },
    };
  }
}

/** A client of a node's engine API: HTTPS, the install's CA as the only trust, the platform's client certificate. */
export function mtlsDocker(address: string, port: number, credentials: NodeCredentials): Docker {
  return new Docker({
    protocol: 'https',
    host: address,
    port,
    ca: credentials.caPem,
    cert: credentials.certPem,
    key: credentials.keyPem,
  });
}

function timeout(signal?: AbortSignal, ms = CALL_TIMEOUT_MS): AbortSignal {
  return signal ? AbortSignal.any([signal, AbortSignal.timeout(ms)]) : AbortSignal.timeout(ms);
}
