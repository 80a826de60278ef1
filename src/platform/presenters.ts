import type { DeploymentLogRecord, DeploymentRecord, DomainRecord, ProjectRecord, ServiceRecord, ServiceSource } from '../domain/types.js';
import { routesGeneratedHostname } from '../domain/storage-server.js';
import { splitGitUrlCredential } from '../domain/validation.js';
import type { PlatformConfig } from '../settings/platform-config.js';
import type { ServicePollRecord } from '../git-hooks/git-hook.records.js';
import { presentPoll, presentTriggerSettings } from '../git-hooks/trigger-settings.js';
import type { SecretBox } from './secret-box.js';
import type { DeploymentLogView, DeploymentView, DomainView, ProjectView, ServiceView } from './views.js';

const iso = (d: Date) => d.toISOString();
const isoOrNull = (d: Date | null) => (d ? d.toISOString() : null);

/**
 * `<service_slug>-<scope>.<rootDomain>`: the hostname a web service gets without asking, `scope`
 * being its environment's (`<project_slug>`, or `<environment>-<project_slug>`: see hostnameScope);
 * none when the label would pass DNS's 63 characters (no certificate could be issued for it).
 */
export function generatedHostname(service: Pick<ServiceRecord, 'slug'>, scope: string, rootDomain: string | null): string | null {
  const label = generatedLabel(service, scope);
  if (!rootDomain || label === null) return null;
  return `${label}.${rootDomain}`;
}

/** The first label of a generated hostname, or null when it would pass 63 characters. */
export function generatedLabel(service: Pick<ServiceRecord, 'slug'>, scope: string): string | null {
  const label = `${service.slug}-${scope}`;
  return label.length > 63 ? null : label;
}

export interface ServiceContext {
  /** The service's environment's hostname scope (hostnameScope). */
  hostnameScope: string;
  domains: DomainRecord[];
  /** Opens the preview variables that are not secret. */
  secrets: SecretBox;
  /** Its branch (or digest) polling, when it polls. */
  poll: ServicePollRecord | null;
}

/** The fields the spec spells a service's source with, placeholder strings included; present on every service. */
export type WireSource = Pick<
  ServiceView,
  'repoFullName' | 'repoUrl' | 'containerImage' | 'databasePublicEnabled' | 'databasePublicHostname' | 'postgresLogicalReplicationEnabled'
>;

const NOT_A_DATABASE = { databasePublicEnabled: false, databasePublicHostname: null, postgresLogicalReplicationEnabled: false } as const;

export function wireSource(source: ServiceSource): WireSource {
  switch (source.kind) {
    case 'repository':
      // Rows saved before credentials were split out of URLs still show none.
      return {
        repoFullName: source.repoFullName,
        repoUrl: source.repoUrl && splitGitUrlCredential(source.repoUrl).url,
        containerImage: null,
        ...NOT_A_DATABASE,
      };
    case 'image':
      return { repoFullName: `image:${source.image}`, repoUrl: 'container-image', containerImage: source.image, ...NOT_A_DATABASE };
    case 'database':
      return {
        repoFullName: `database:${source.engine}`,
        repoUrl: 'database',
        containerImage: null,
        databasePublicEnabled: source.publicEnabled,
        databasePublicHostname: source.publicHostname,
        postgresLogicalReplicationEnabled: source.logicalReplicationEnabled,
      };
    case 'storage':
      // The S3 protocol, whatever server runs it; the bucket and keys are in the storage instance's own view.
      return { repoFullName: 'storage:s3', repoUrl: 'storage', containerImage: null, ...NOT_A_DATABASE };
  }
}

export function presentService(service: ServiceRecord, ctx: ServiceContext, config: PlatformConfig): ServiceView {
  const wire = wireSource(service.source);
  return {
    id: service.id,
    projectId: service.projectId,
    environmentId: service.environmentId,
    name: service.name,
    slug: service.slug,
    repoFullName: wire.repoFullName,
    repoUrl: wire.repoUrl,
    containerImage: wire.containerImage,
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
    databasePublicEnabled: wire.databasePublicEnabled,
    databasePublicHostname: wire.databasePublicHostname,
    postgresLogicalReplicationEnabled: wire.postgresLogicalReplicationEnabled,
    status: service.status,
    reachable: service.reachable,
    localUrl: service.reachable && service.runtimeMode === 'web' ? `http://127.0.0.1:${service.hostPort}` : '',
    primaryUrl: primaryUrl(service, ctx, config),
    preferredDomain: service.preferredDomain,
    framework: service.framework,
    lastDeployedAt: isoOrNull(service.lastDeployedAt),
    ...presentTriggerSettings(service, ctx.secrets),
    poll: service.pollIntervalSeconds === null ? null : presentPoll(ctx.poll),
    createdAt: iso(service.createdAt),
    updatedAt: iso(service.updatedAt),
  };
}

function primaryUrl(service: ServiceRecord, ctx: ServiceContext, config: PlatformConfig): string {
  if (service.runtimeMode === 'worker' || service.source.kind === 'database') return '';
  const generated = routesGeneratedHostname(service) ? generatedHostname(service, ctx.hostnameScope, config.rootDomain) : null;
  const host = service.preferredDomain ?? ctx.domains[0]?.hostname ?? generated;
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
    rollbackOf: deployment.rollbackOf,
    commitMessage: deployment.origin?.commitMessage ?? null,
    commitAuthor: deployment.origin?.commitAuthor ?? null,
    provider: deployment.origin?.provider ?? null,
    deliveryId: deployment.origin?.deliveryId ?? null,
    imageDigest: deployment.origin?.imageDigest ?? null,
    previewId: deployment.origin?.previewId ?? null,
    startedAt: isoOrNull(deployment.startedAt),
    finishedAt: isoOrNull(deployment.finishedAt),
    createdAt: iso(deployment.createdAt),
  };
}

export function presentLogLine(line: DeploymentLogRecord): DeploymentLogView {
  return { id: line.id, deploymentId: line.deploymentId, line: line.line, stream: line.stream, createdAt: iso(line.createdAt) };
}
