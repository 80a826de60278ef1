import { resourcesOf } from '../domain/service-scale.js';
import { PLACEMENT_ROLES } from '../domain/service-placement.js';
import { z } from 'zod';
import { SERVER_STATES, type ServerRecord } from '../cluster/server.records.js';
import {
  BUILD_METHODS,
  DETECTED_BUILD_METHODS,
  PROJECT_STATUSES,
  RUNTIME_MODES,
  SERVICE_VIEW_STATUSES,
  type DomainRecord,
  type ProjectRecord,
  type ServiceRecord,
  type ServiceSource,
} from '../domain/types.js';
import { generatedHostname } from '../domain/environments.js';
import { routesGeneratedHostname } from '../domain/storage-server.js';
import { splitGitUrlCredential } from '../domain/validation.js';
import { iso, isoOrNull, timestamp } from '../platform/view-fields.js';
import type { PlatformConfig } from '../platform/platform-config.js';
import type { SecretBox } from '../platform/secret-box.js';
import type { ServicePollRecord } from '../git-hooks/git-hook.records.js';
import { pollView, presentPoll, presentTriggerSettings, triggerSettingsView } from '../git-hooks/trigger-settings.js';

/** Projects and their services on the wire, and how a record becomes one (presentService, presentProject). */

export const serviceView = z
  .object({
    id: z.string(),
    projectId: z.string(),
    environmentId: z.string().meta({ description: "The project's environment the service lives in" }),
    name: z.string(),
    slug: z.string(),
    repoFullName: z.string().nullable(),
    repoUrl: z.string().nullable(),
    containerImage: z.string().nullable(),
    branch: z.string(),
    rootDir: z.string().nullable(),
    hasGitToken: z.boolean(),
    installCommand: z.string().nullable(),
    buildCommand: z.string().nullable(),
    startCommand: z.string().nullable(),
    staticOutput: z.string().nullable(),
    buildMethod: z.enum(BUILD_METHODS),
    dockerfilePath: z.string().nullable(),
    detectedBuildMethod: z.enum(DETECTED_BUILD_METHODS).nullable(),
    runtimeMode: z.enum(RUNTIME_MODES),
    internalPort: z.number().int(),
    hostPort: z.number().int(),
    replicas: z.number().int().meta({ description: 'Copies that run (0: stopped and kept)' }),
    resources: z
      .object({
        cpuLimit: z.number().nullable(),
        memoryLimitMb: z.number().int().nullable(),
        cpuReservation: z.number().nullable(),
        memoryReservationMb: z.number().int().nullable(),
      })
      .meta({ id: 'ServiceResources', description: 'What each replica may use (limits) and is promised (reservations); null: none' }),
    placement: z
      .object({
        must: z.record(z.string(), z.string()),
        mustNot: z.record(z.string(), z.string()),
        role: z.enum(PLACEMENT_ROLES).nullable(),
      })
      .nullable()
      .meta({ id: 'ServicePlacement', description: 'Where its replicas may run on the cluster; null: anywhere' }),
    databasePublicEnabled: z.boolean(),
    databasePublicHostname: z.string().nullable(),
    postgresLogicalReplicationEnabled: z.boolean(),
    status: z.enum(SERVICE_VIEW_STATUSES).meta({
      description: 'unavailable: a database or storage instance whose server is down (server says which); else as stored',
    }),
    server: z
      .object({ id: z.string(), name: z.string(), state: z.enum(SERVER_STATES) })
      .nullable()
      .meta({
        id: 'ServiceServer',
        description:
          'The server holding the volume of a database or storage instance (it runs there, one replica; POST /api/services/{id}/move moves it); null for other services',
      }),
    reachable: z.boolean(),
    localUrl: z.string(),
    primaryUrl: z.string(),
    preferredDomain: z.string().nullable(),
    framework: z.string().nullable(),
    lastDeployedAt: timestamp.nullable(),
    ...triggerSettingsView,
    poll: pollView.nullable().meta({ description: 'Branch (or digest) polling, while pollIntervalSeconds is set' }),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Service' });
export type ServiceView = z.infer<typeof serviceView>;

export const projectView = z
  .object({
    id: z.string(),
    name: z.string(),
    slug: z.string(),
    description: z.string(),
    status: z.enum(PROJECT_STATUSES),
    serviceCount: z.number().int(),
    lastUpdatedAt: timestamp,
    services: z.array(serviceView),
  })
  .meta({ id: 'Project' });
export type ProjectView = z.infer<typeof projectView>;

/** A page of GET /api/projects: nextCursor is null on the last page. */
export const projectPage = z.object({
  projects: z.array(projectView),
  nextCursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page' }),
});
export type ProjectPage = z.infer<typeof projectPage>;

export const suggestionView = z.object({ key: z.string(), value: z.string().optional(), label: z.string() }).meta({ id: 'Suggestion' });
export type SuggestionView = z.infer<typeof suggestionView>;

export interface ServiceContext {
  /** The service's environment's hostname scope (hostnameScope). */
  hostnameScope: string;
  domains: DomainRecord[];
  /** Opens the preview variables that are not secret. */
  secrets: SecretBox;
  /** Its branch (or digest) polling, when it polls. */
  poll: ServicePollRecord | null;
  /** The server holding its volume (databases and storage instances: holdersOf); absent or null for the others. */
  holder?: ServerRecord | null | undefined;
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
  // A database whose server is down answers nowhere, whatever its last check said.
  const reachable = service.reachable && ctx.holder?.state !== 'down';
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
    replicas: service.replicas,
    resources: resourcesOf(service),
    placement: service.placement,
    databasePublicEnabled: wire.databasePublicEnabled,
    databasePublicHostname: wire.databasePublicHostname,
    postgresLogicalReplicationEnabled: wire.postgresLogicalReplicationEnabled,
    status: ctx.holder?.state === 'down' ? 'unavailable' : service.status,
    server: ctx.holder ? { id: ctx.holder.id, name: ctx.holder.name, state: ctx.holder.state } : null,
    reachable,
    localUrl: reachable && service.runtimeMode === 'web' ? `http://127.0.0.1:${service.hostPort}` : '',
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
