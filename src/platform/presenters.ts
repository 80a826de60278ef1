import type { DeploymentLogRecord, DeploymentRecord, DomainRecord, ProjectRecord, ServiceRecord } from '../domain/types.js';
import { splitGitUrlCredential } from '../domain/validation.js';
import type { PlatformConfig } from '../settings/platform-config.js';
import type { DeploymentLogView, DeploymentView, DomainView, ProjectView, ServiceView } from './views.js';

const iso = (d: Date) => d.toISOString();
const isoOrNull = (d: Date | null) => (d ? d.toISOString() : null);

/**
 * `<service_slug>-<project_slug>.<rootDomain>`: the hostname a web service gets without asking;
 * none when the label would pass DNS's 63 characters (no certificate could be issued for it).
 */
export function generatedHostname(service: Pick<ServiceRecord, 'slug'>, projectSlug: string, rootDomain: string | null): string | null {
  const label = `${service.slug}-${projectSlug}`;
  if (!rootDomain || label.length > 63) return null;
  return `${label}.${rootDomain}`;
}

export interface ServiceContext {
  projectSlug: string;
  domains: DomainRecord[];
}

export function presentService(service: ServiceRecord, ctx: ServiceContext, config: PlatformConfig): ServiceView {
  return {
    id: service.id,
    projectId: service.projectId,
    name: service.name,
    slug: service.slug,
    repoFullName: service.repoFullName,
    // Rows saved before credentials were split out of URLs still show none.
    repoUrl: service.repoUrl && splitGitUrlCredential(service.repoUrl).url,
    containerImage: service.containerImage,
    branch: service.branch,
    rootDir: service.rootDir,
    hasGitToken: service.gitTokenEncrypted !== null,
    installCommand: service.installCommand,
    buildCommand: service.buildCommand,
    startCommand: service.startCommand,
    staticOutput: service.staticOutput,
    buildMethod: service.buildMethod,
    dockerfilePath: service.dockerfilePath,
    detectedBuildMethod: service.detectedBuildMethod,
    runtimeMode: service.runtimeMode,
    internalPort: service.internalPort,
    hostPort: service.hostPort,
    databasePublicEnabled: service.databasePublicEnabled,
    databasePublicHostname: service.databasePublicHostname,
    postgresLogicalReplicationEnabled: service.postgresLogicalReplicationEnabled,
    status: service.status,
    reachable: service.reachable,
    localUrl: service.reachable && service.runtimeMode === 'web' ? `http://127.0.0.1:${service.hostPort}` : '',
    primaryUrl: primaryUrl(service, ctx, config),
    preferredDomain: service.preferredDomain,
    framework: service.framework,
    lastDeployedAt: isoOrNull(service.lastDeployedAt),
    createdAt: iso(service.createdAt),
    updatedAt: iso(service.updatedAt),
  };
}

function primaryUrl(service: ServiceRecord, ctx: ServiceContext, config: PlatformConfig): string {
  if (service.runtimeMode === 'worker' || service.repoFullName?.startsWith('database:')) return '';
  const host = service.preferredDomain ?? ctx.domains[0]?.hostname ?? generatedHostname(service, ctx.projectSlug, config.rootDomain);
  return host ? `${config.publicScheme}://${host}${config.publicPort ? `:${config.publicPort}` : ''}` : '';
}

export function presentProject(project: ProjectRecord, services: ServiceView[]): ProjectView {
  const lastUpdated = services.reduce((latest, s) => (s.updatedAt > latest ? s.updatedAt : latest), iso(project.updatedAt));
  return {
    id: project.id,
    name: project.name,
    slug: project.slug,
    description: project.description,
    status: project.status,
    serviceCount: services.length,
    lastUpdatedAt: lastUpdated,
    services,
  };
}

export function presentDomain(domain: DomainRecord): DomainView {
  return {
    id: domain.id,
    serviceId: domain.serviceId,
    hostname: domain.hostname,
    status: domain.status,
    createdAt: iso(domain.createdAt),
    updatedAt: iso(domain.updatedAt),
  };
}

export function presentDeployment(deployment: DeploymentRecord): DeploymentView {
  return {
    id: deployment.id,
    serviceId: deployment.serviceId,
    commitSha: deployment.commitSha,
    status: deployment.status,
    trigger: deployment.trigger,
    imageTag: deployment.imageTag,
    containerName: deployment.containerName,
    startedAt: isoOrNull(deployment.startedAt),
    finishedAt: isoOrNull(deployment.finishedAt),
    createdAt: iso(deployment.createdAt),
  };
}

export function presentLogLine(line: DeploymentLogRecord): DeploymentLogView {
  return { id: line.id, deploymentId: line.deploymentId, line: line.line, stream: line.stream, createdAt: iso(line.createdAt) };
}
