import { z } from 'zod';
import { SERVER_AVAILABILITIES, SERVER_ROLES, SERVER_STATES } from './server.records.js';

/** The servers API's shapes (docs/cluster.md): declared once, the OpenAPI document and the client derive from them. */
const timestamp = z.string().meta({ description: 'ISO 8601 UTC timestamp with milliseconds', example: '2026-11-21T12:00:00.000Z' });

export const serverTaskView = z
  .object({
    id: z.string().meta({ description: 'The Swarm task id; on a single server, the container id' }),
    serviceId: z.string().nullable().meta({ description: 'The Slipway service it runs (null: not one of ours)' }),
    name: z.string(),
    state: z.string().meta({ description: "Swarm's task state (`running`, `pending`, `shutdown`...), or the container's" }),
    desiredState: z.string(),
    containerId: z.string().nullable(),
  })
  .meta({ id: 'ServerTask' });

export const serverView = z
  .object({
    id: z.string(),
    name: z.string(),
    role: z.enum(SERVER_ROLES),
    local: z.boolean().meta({ description: 'The host running the platform (the first server, a manager)' }),
    state: z.enum(SERVER_STATES).meta({ description: '`unknown` until it joined, and while the manager cannot tell' }),
    availability: z.enum(SERVER_AVAILABILITIES),
    address: z.string().nullable().meta({ description: 'The address it advertises to the cluster (null until it joined)' }),
    hostname: z.string().nullable(),
    engineVersion: z.string().nullable(),
    labels: z.record(z.string(), z.string()),
    resources: z
      .object({
        cpus: z.number(),
        memoryMb: z.number().int(),
        reservedCpus: z.number(),
        reservedMemoryMb: z.number().int(),
      })
      .nullable()
      .meta({ description: 'Total and reserved (by the tasks on it) CPU and memory; null while the manager cannot be asked' }),
    services: z.array(z.object({ serviceId: z.string().nullable(), name: z.string(), tasks: z.number().int() })),
    tasks: z.array(serverTaskView),
    databases: z
      .array(z.object({ id: z.string(), name: z.string() }))
      .meta({ description: 'The databases and storage instances whose volume this server holds (they run here)' }),
    stateChangedAt: timestamp,
    joinedAt: timestamp.nullable(),
    createdAt: timestamp,
  })
  .meta({ id: 'Server' });

export const serversView = z.object({ servers: z.array(serverView) });
export const serverOneView = z.object({ server: serverView });

export const serverCreatedView = z.object({
  server: serverView,
  join: z
    .object({
      command: z.string().meta({
        description: 'Run it as root on the new machine (shown once): it installs the engine where missing, then joins',
      }),
      token: z.string().meta({ description: 'The single-use join token inside the command (shown once)' }),
      managerAddress: z.string().meta({ description: "The manager's `address:2377` the server joins" }),
      expiresAt: timestamp,
    })
    .meta({ id: 'ServerJoin' }),
});

/** What a joining server gets back for its token (the join script reads it: every value is safe in a shell). */
export const joinBundleView = z
  .object({
    serverId: z.string(),
    name: z.string(),
    caCertificateBase64: z
      .string()
      .meta({ description: "The install's CA (PEM, base64): the node checks it against the command's fingerprint" }),
    certificateBase64: z.string().meta({ description: "The node engine's server certificate for its key (PEM, base64)" }),
    swarmJoinToken: z.string(),
    managerAddress: z.string(),
    registryAddress: z.string().nullable().meta({ description: "The platform's registry (`address:port`), whose CA the engine trusts" }),
    engineTlsPort: z.number().int(),
  })
  .meta({ id: 'ServerJoinBundle' });

export const registryView = z
  .object({
    kind: z.enum(['platform', 'external']),
    address: z.string().nullable().meta({ description: '`host:port` of the registry; null while the platform has not started its own' }),
    username: z.string().nullable(),
    running: z.boolean().meta({ description: 'The registry answers with its credentials' }),
  })
  .meta({ id: 'Registry' });

export type ServerView = z.infer<typeof serverView>;
export type ServerTaskView = z.infer<typeof serverTaskView>;
export type ServerCreatedView = z.infer<typeof serverCreatedView>;
export type JoinBundle = z.infer<typeof joinBundleView>;
export type RegistryView = z.infer<typeof registryView>;
