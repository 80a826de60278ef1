import type { ContainerEngine } from '../ports/container-engine.port.js';
import type { GitSource } from '../ports/git-source.port.js';
import type { HealthProbe } from '../ports/health-probe.port.js';
import type { PortForwarder } from '../ports/port-forwarder.port.js';

/** The ports that run deployments: only the runner and the cleanup of removed services use them. */
export interface RuntimeDeps {
  engine: ContainerEngine;
  git: GitSource;
  forwarder: PortForwarder;
  health: HealthProbe;
}

/** Names and labels of what the platform creates, so it can find (and clean up) its own. */
export const LABELS = {
  managed: 'slipway.managed',
  /** Which installation made it: two installs sharing a Docker host never touch each other's containers. */
  instance: 'slipway.instance',
  service: 'slipway.service',
  deployment: 'slipway.deployment',
  project: 'slipway.project',
} as const;

export function resourceNames(prefix: string, serviceId: string, deploymentId: string, projectId: string) {
  return {
    image: `${prefix}-${serviceId}-${deploymentId}`,
    container: `${prefix}-${serviceId}-${deploymentId}`,
    network: `${prefix}-${projectId}`,
    volume: `${prefix}-${serviceId}-data`,
    imagePrefix: `${prefix}-${serviceId}-`,
  };
}
