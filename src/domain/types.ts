import type { DeploymentStatus } from './deployment-state.js';

/** Records as the services see them: plain data, no ORM. Timestamps are Date; the edge renders ISO strings. */
export type Access = 'read' | 'write';
export type BuildMethod = 'auto' | 'dockerfile' | 'analyzer';
export type RuntimeMode = 'web' | 'worker';
export type ProjectStatus = 'idle' | 'active';
export type ServiceStatus = 'idle' | 'deploying' | 'active' | 'failed';
export type LogStream = 'stdout' | 'stderr';

export interface ProjectRecord {
  id: string;
  name: string;
  slug: string;
  description: string;
  status: ProjectStatus;
  createdAt: Date;
  updatedAt: Date;
}

export interface ServiceRecord {
  id: string;
  projectId: string;
  name: string;
  slug: string;
  repoFullName: string | null;
  repoUrl: string | null;
  containerImage: string | null;
  branch: string;
  rootDir: string | null;
  gitTokenEncrypted: string | null;
  installCommand: string | null;
  buildCommand: string | null;
  startCommand: string | null;
  staticOutput: string | null;
  buildMethod: BuildMethod;
  dockerfilePath: string | null;
  detectedBuildMethod: 'dockerfile' | 'analyzer' | null;
  runtimeMode: RuntimeMode;
  internalPort: number;
  hostPort: number;
  databasePublicEnabled: boolean;
  databasePublicHostname: string | null;
  postgresLogicalReplicationEnabled: boolean;
  status: ServiceStatus;
  reachable: boolean;
  preferredDomain: string | null;
  framework: string | null;
  lastDeployedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface EnvVarRecord {
  id: string;
  serviceId: string;
  key: string;
  valueEncrypted: string;
  /** Secret values are never shown in responses (generated passwords are secret). */
  secret: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export interface DomainRecord {
  id: string;
  serviceId: string;
  hostname: string;
  status: 'active';
  createdAt: Date;
  updatedAt: Date;
}

export interface DeploymentRecord {
  id: string;
  serviceId: string;
  commitSha: string | null;
  status: DeploymentStatus;
  trigger: 'manual';
  imageTag: string | null;
  containerName: string | null;
  /** Set by abort while running: the runner watches it and stops the work. */
  abortRequested: boolean;
  startedAt: Date | null;
  finishedAt: Date | null;
  createdAt: Date;
}

export interface DeploymentLogRecord {
  id: number;
  deploymentId: string;
  line: string;
  stream: LogStream;
  createdAt: Date;
}

export interface ApiKeyRecord {
  id: string;
  name: string;
  access: Access;
  /** null means all projects. */
  projectIds: string[] | null;
  prefix: string;
  tokenHash: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}
