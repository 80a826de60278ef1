import { defineEntity, p } from '@mikro-orm/core';
import { type Row, type Same, same } from './row-types.js';
import type {
  RegistryImageRecord,
  ServerAvailability,
  ServerRecord,
  ServerRole,
  ServerState,
  ServicePlacementRecord,
} from '../cluster/server.records.js';
import type { ControlPlaneRecord, JobClaimRecord, LeaseRecord } from '../jobs/control-plane.records.js';

/*
 * The cluster's tables (src/cluster) and the control planes' (src/jobs: processes sharing one
 * database), declared like entities.ts and listed there in ALL_ENTITIES. Kept in a file of their own
 * so the cluster's schema reads in one place.
 */

/** The servers: the local host first, then each node added with POST /api/servers. */
export const Server = defineEntity({
  name: 'Server',
  tableName: 'servers',
  properties: {
    id: p.string().length(32).primary(),
    name: p.string().length(64).unique(),
    role: p.string().length(16).$type<ServerRole>(),
    local: p.boolean(),
    address: p.string().length(64).strictNullable(),
    hostname: p.string().length(255).strictNullable(),
    swarmNodeId: p.string().length(64).strictNullable().index(),
    labels: p.json<Record<string, string>>(),
    availability: p.string().length(16).$type<ServerAvailability>(),
    state: p.string().length(16).$type<ServerState>(),
    stateChangedAt: p.datetime(),
    engineVersion: p.string().length(64).strictNullable(),
    joinTokenHash: p.string().length(64).strictNullable().unique(),
    joinExpiresAt: p.datetime().strictNullable(),
    joinUsedAt: p.datetime().strictNullable(),
    joinedAt: p.datetime().strictNullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});

/** The node holding a stateful service's volume (databases and storage instances are pinned to it). */
export const ServicePlacement = defineEntity({
  name: 'ServicePlacement',
  tableName: 'service_placements',
  properties: {
    serviceId: p.string().length(32).primary(),
    serverId: p.string().length(32).index(),
    updatedAt: p.datetime(),
  },
});

/** Images pushed to the cluster's registry, one per deployment: what nodes pull, and what garbage collection removes. */
export const RegistryImage = defineEntity({
  name: 'RegistryImage',
  tableName: 'registry_images',
  properties: {
    deploymentId: p.string().length(32).primary(),
    serviceId: p.string().length(32).index(),
    repository: p.string().length(255),
    digest: p.string().length(80),
    pushedAt: p.datetime(),
  },
});

/** Platform processes on this database, each with its heartbeat. */
export const ControlPlane = defineEntity({
  name: 'ControlPlane',
  tableName: 'control_planes',
  properties: {
    id: p.string().length(32).primary(),
    hostname: p.string().length(255),
    pid: p.integer(),
    startedAt: p.datetime(),
    heartbeatAt: p.datetime(),
  },
});

/** Who holds a running job (deployments, backups, imports). */
export const JobClaim = defineEntity({
  name: 'JobClaim',
  tableName: 'job_claims',
  properties: {
    jobId: p.string().length(32).primary(),
    kind: p.string().length(32),
    owner: p.string().length(32).index(),
    claimedAt: p.datetime(),
  },
});

/** Duties one process holds at a time, until `expiresAt` unless renewed. */
export const Lease = defineEntity({
  name: 'Lease',
  tableName: 'leases',
  properties: {
    name: p.string().length(32).primary(),
    holder: p.string().length(32),
    expiresAt: p.datetime(),
  },
});

export const CLUSTER_ENTITIES = [Server, ServicePlacement, RegistryImage, ControlPlane, JobClaim, Lease];

export type ServerRow = Row<typeof Server>;
export type ServicePlacementRow = Row<typeof ServicePlacement>;
export type RegistryImageRow = Row<typeof RegistryImage>;
export type ControlPlaneRow = Row<typeof ControlPlane>;
export type JobClaimRow = Row<typeof JobClaim>;
export type LeaseRow = Row<typeof Lease>;

same<Same<ServerRow, ServerRecord>>();
same<Same<ServicePlacementRow, ServicePlacementRecord>>();
same<Same<RegistryImageRow, RegistryImageRecord>>();
same<Same<ControlPlaneRow, ControlPlaneRecord>>();
same<Same<JobClaimRow, JobClaimRecord>>();
same<Same<LeaseRow, LeaseRecord>>();
