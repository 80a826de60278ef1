import { EntitySchema } from '@mikro-orm/core';
import type {
  Access,
  ApiKeyRecord,
  BuildMethod,
  DeploymentLogRecord,
  DeploymentRecord,
  DomainRecord,
  EnvVarRecord,
  LogStream,
  ProjectRecord,
  ProjectStatus,
  RuntimeMode,
  ServiceRecord,
  ServiceStatus,
} from '../domain/types.js';
import type { DeploymentStatus } from '../domain/deployment-state.js';

/*
 * Entities are plain classes implementing the domain records, mapped with EntitySchema:
 * no decorators, so tsx and vitest (esbuild, no decorator metadata) load them as they are.
 * Foreign keys are plain columns with indexes; deletes cascade in the repository, inside one
 * transaction, so SQLite and PostgreSQL behave the same.
 */

export class Project implements ProjectRecord {
  id!: string;
  name!: string;
  slug!: string;
  description!: string;
  status!: ProjectStatus;
  createdAt!: Date;
  updatedAt!: Date;
}

export class Service implements ServiceRecord {
  id!: string;
  projectId!: string;
  name!: string;
  slug!: string;
  repoFullName!: string | null;
  repoUrl!: string | null;
  containerImage!: string | null;
  branch!: string;
  rootDir!: string | null;
  gitTokenEncrypted!: string | null;
  installCommand!: string | null;
  buildCommand!: string | null;
  startCommand!: string | null;
  staticOutput!: string | null;
  buildMethod!: BuildMethod;
  dockerfilePath!: string | null;
  detectedBuildMethod!: 'dockerfile' | 'analyzer' | null;
  runtimeMode!: RuntimeMode;
  internalPort!: number;
  hostPort!: number;
  databasePublicEnabled!: boolean;
  databasePublicHostname!: string | null;
  postgresLogicalReplicationEnabled!: boolean;
  status!: ServiceStatus;
  reachable!: boolean;
  preferredDomain!: string | null;
  framework!: string | null;
  lastDeployedAt!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export class EnvVar implements EnvVarRecord {
  id!: string;
  serviceId!: string;
  key!: string;
  valueEncrypted!: string;
  secret!: boolean;
  createdAt!: Date;
  updatedAt!: Date;
}

export class Domain implements DomainRecord {
  id!: string;
  serviceId!: string;
  hostname!: string;
  status!: 'active';
  createdAt!: Date;
  updatedAt!: Date;
}

export class Deployment implements DeploymentRecord {
  id!: string;
  serviceId!: string;
  commitSha!: string | null;
  status!: DeploymentStatus;
  trigger!: 'manual';
  imageTag!: string | null;
  containerName!: string | null;
  abortRequested!: boolean;
  startedAt!: Date | null;
  finishedAt!: Date | null;
  createdAt!: Date;
}

export class DeploymentLog implements DeploymentLogRecord {
  id!: number;
  deploymentId!: string;
  line!: string;
  stream!: LogStream;
  createdAt!: Date;
}

export class ApiKey implements ApiKeyRecord {
  id!: string;
  name!: string;
  access!: Access;
  projectIds!: string[] | null;
  prefix!: string;
  tokenHash!: string;
  createdAt!: Date;
  lastUsedAt!: Date | null;
}

/** Platform-wide settings, one JSON value per key. */
export class Setting {
  key!: string;
  value!: string;
  updatedAt!: Date;
}

const id = { type: 'string', length: 32, primary: true } as const;
const fk = { type: 'string', length: 32, index: true } as const;
const str = (length = 255) => ({ type: 'string', length }) as const;
const nullableStr = (length = 255) => ({ type: 'string', length, nullable: true }) as const;
const text = { type: 'text' } as const;
const nullableText = { type: 'text', nullable: true } as const;
const date = { type: 'datetime' } as const;
const nullableDate = { type: 'datetime', nullable: true } as const;
const bool = { type: 'boolean' } as const;
const int = { type: 'integer' } as const;

export const ProjectSchema = new EntitySchema<Project>({
  class: Project,
  tableName: 'projects',
  properties: {
    id,
    name: str(),
    slug: { ...str(64), unique: true },
    description: text,
    status: str(16),
    createdAt: date,
    updatedAt: date,
  },
});

export const ServiceSchema = new EntitySchema<Service>({
  class: Service,
  tableName: 'services',
  uniques: [{ properties: ['projectId', 'slug'] }],
  properties: {
    id,
    projectId: fk,
    name: str(),
    slug: str(64),
    repoFullName: nullableStr(512),
    repoUrl: nullableText,
    containerImage: nullableStr(512),
    branch: str(),
    rootDir: nullableStr(1024),
    gitTokenEncrypted: nullableText,
    installCommand: nullableText,
    buildCommand: nullableText,
    startCommand: nullableText,
    staticOutput: nullableStr(1024),
    buildMethod: str(16),
    dockerfilePath: nullableStr(1024),
    detectedBuildMethod: nullableStr(16),
    runtimeMode: str(16),
    internalPort: int,
    // Unique: a host port is never handed to two services at once.
    hostPort: { ...int, unique: true },
    databasePublicEnabled: bool,
    databasePublicHostname: nullableStr(253),
    postgresLogicalReplicationEnabled: bool,
    status: str(16),
    reachable: bool,
    preferredDomain: nullableStr(253),
    framework: nullableStr(64),
    lastDeployedAt: nullableDate,
    createdAt: date,
    updatedAt: date,
  },
});

export const EnvVarSchema = new EntitySchema<EnvVar>({
  class: EnvVar,
  tableName: 'env_vars',
  uniques: [{ properties: ['serviceId', 'key'] }],
  properties: {
    id,
    serviceId: fk,
    key: str(),
    valueEncrypted: text,
    secret: bool,
    createdAt: date,
    updatedAt: date,
  },
});

export const DomainSchema = new EntitySchema<Domain>({
  class: Domain,
  tableName: 'domains',
  properties: {
    id,
    serviceId: fk,
    // Unique across the platform: one hostname routes to one service.
    hostname: { ...str(253), unique: true },
    status: str(16),
    createdAt: date,
    updatedAt: date,
  },
});

export const DeploymentSchema = new EntitySchema<Deployment>({
  class: Deployment,
  tableName: 'deployments',
  indexes: [{ properties: ['status', 'createdAt'] }],
  properties: {
    id,
    serviceId: fk,
    commitSha: nullableStr(64),
    status: str(16),
    trigger: str(16),
    imageTag: nullableStr(255),
    containerName: nullableStr(255),
    abortRequested: bool,
    startedAt: nullableDate,
    finishedAt: nullableDate,
    createdAt: date,
  },
});

export const DeploymentLogSchema = new EntitySchema<DeploymentLog>({
  class: DeploymentLog,
  tableName: 'deployment_logs',
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    deploymentId: fk,
    line: text,
    stream: str(8),
    createdAt: date,
  },
});

export const ApiKeySchema = new EntitySchema<ApiKey>({
  class: ApiKey,
  tableName: 'api_keys',
  properties: {
    id,
    name: str(),
    access: str(8),
    projectIds: { type: 'json', nullable: true },
    prefix: str(16),
    tokenHash: { ...str(64), unique: true },
    createdAt: date,
    lastUsedAt: nullableDate,
  },
});

export const SettingSchema = new EntitySchema<Setting>({
  class: Setting,
  tableName: 'settings',
  properties: {
    key: { type: 'string', length: 64, primary: true },
    value: text,
    updatedAt: date,
  },
});

export const ALL_ENTITIES = [
  SettingSchema,
  ProjectSchema,
  ServiceSchema,
  EnvVarSchema,
  DomainSchema,
  DeploymentSchema,
  DeploymentLogSchema,
  ApiKeySchema,
];
