import { NotFoundError } from '../domain/errors.js';
import type { EnvironmentRecord } from '../domain/environments.js';
import type { DeploymentRecord, ProjectRecord, ServiceRecord } from '../domain/types.js';
import type { Store } from '../persistence/store.js';
import { assertProjectVisible, type Actor } from '../domain/access.js';

/*
 * Loading what a request addresses: 404 when it does not exist, and the same 404 when it exists
 * outside the key's project scope (a scoped key cannot tell the two apart).
 */

export async function projectFor(store: Store, actor: Actor, projectId: string): Promise<ProjectRecord> {
  const project = await store.projects.get(projectId);
  if (!project) throw new NotFoundError('Project', projectId);
  assertProjectVisible(actor, project.id, 'Project', projectId);
  return project;
}

export async function environmentFor(store: Store, actor: Actor, environmentId: string): Promise<EnvironmentRecord> {
  const environment = await store.environments.get(environmentId);
  if (!environment) throw new NotFoundError('Environment', environmentId);
  assertProjectVisible(actor, environment.projectId, 'Environment', environmentId);
  return environment;
}

export async function serviceFor(store: Store, actor: Actor, serviceId: string): Promise<ServiceRecord> {
  const service = await store.projects.getService(serviceId);
  if (!service) throw new NotFoundError('Service', serviceId);
  assertProjectVisible(actor, service.projectId, 'Service', serviceId);
  return service;
}

/** Every service of the projects the key sees, in creation order. */
export async function visibleServices(store: Store, actor: Actor): Promise<ServiceRecord[]> {
  return actor.projectIds ? store.projects.listServices([...actor.projectIds]) : store.projects.listAllServices();
}

/** A service of one kind (a database, a storage instance): the same 404 for a service of another kind as for an unknown id. */
export async function serviceOfKind(
  store: Store,
  actor: Actor,
  serviceId: string,
  noun: string,
  isKind: (service: ServiceRecord) => boolean,
): Promise<ServiceRecord> {
  const service = await serviceFor(store, actor, serviceId).catch((error: unknown) => {
    if (error instanceof NotFoundError) throw new NotFoundError(noun, serviceId);
    throw error;
  });
  if (!isKind(service)) throw new NotFoundError(noun, serviceId);
  return service;
}

export async function deploymentFor(
  store: Store,
  actor: Actor,
  deploymentId: string,
): Promise<{ deployment: DeploymentRecord; service: ServiceRecord }> {
  const deployment = await store.deployments.get(deploymentId);
  if (!deployment) throw new NotFoundError('Deployment', deploymentId);
  const service = await store.projects.getService(deployment.serviceId);
  if (!service) throw new NotFoundError('Deployment', deploymentId);
  assertProjectVisible(actor, service.projectId, 'Deployment', deploymentId);
  return { deployment, service };
}
