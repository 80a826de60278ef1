import type { ServiceRecord } from './types.js';

/**
 * The platform's domain events: one name and one payload per fact worth telling someone about.
 * Capabilities publish them (src/events/event-publisher.ts) in the transaction of the change they
 * report; notification channels, signed webhooks and the event stream read them from the outbox.
 * docs/events.md documents each type with its payload; adding one is an entry here and in
 * EVENT_AUDIENCE, and its payload interface below.
 */
export const EVENT_TYPES = [
  'deployment.queued',
  'deployment.started',
  'deployment.succeeded',
  'deployment.failed',
  'deployment.aborted',
  'deployment.superseded',
  'service.crash_looping',
  'service.recovered',
  'service.health_failing',
  'service.health_recovered',
  'database.stopped_unexpectedly',
  'backup.succeeded',
  'backup.failed',
  'restore.succeeded',
  'restore.failed',
  'import.succeeded',
  'import.failed',
  'drill.passed',
  'drill.failed',
  'host.disk_high',
  'host.disk_ok',
  'server.down',
  'server.up',
  'api_key.created',
  'api_key.deleted',
  'token.created',
  'token.deleted',
  'auth.signin_new_address',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** A rule's event pattern: a type, `<family>.*` or `*`. */
export function eventPatternMatches(pattern: string, type: EventType): boolean {
  if (pattern === '*' || pattern === type) return true;
  return pattern.endsWith('.*') && type.startsWith(pattern.slice(0, -1));
}

/** Whether a pattern names at least one known type (an unknown one is refused on save). */
export function isKnownEventPattern(pattern: string): boolean {
  return EVENT_TYPES.some((type) => eventPatternMatches(pattern, type));
}

/**
 * Who may see an event on the stream: `project` events those who see its project; `install` events
 * every caller whose key or account covers all projects; `admin` events the install's owners and
 * admins (and all-project write keys) only.
 */
export type EventAudience = 'project' | 'install' | 'admin';

export function eventAudience(type: EventType): EventAudience {
  if (type.startsWith('api_key.') || type.startsWith('token.') || type.startsWith('auth.')) return 'admin';
  if (type.startsWith('host.') || type.startsWith('server.')) return 'install';
  return 'project';
}

/** How loud an event is: what a channel's colour and a push priority follow. */
export type EventSeverity = 'info' | 'success' | 'warning' | 'error';

/** What every event about a service names, so a message can say where it happened. */
export interface ServiceRef {
  projectId: string;
  environmentId: string;
  serviceId: string;
  serviceName: string;
}

export function serviceRefOf(service: Pick<ServiceRecord, 'id' | 'projectId' | 'environmentId' | 'name'>): ServiceRef {
  return { projectId: service.projectId, environmentId: service.environmentId, serviceId: service.id, serviceName: service.name };
}

export interface DeploymentEventData extends ServiceRef {
  deploymentId: string;
  trigger: string;
  commitSha: string | null;
  /** For failed, aborted and superseded: why, in the words of the deployment's log. */
  reason: string | null;
}

export interface BackupEventData extends ServiceRef {
  backupId: string;
  storage: string;
  sizeBytes: number | null;
  /** For failed: the error. */
  error: string | null;
}

export interface ImportEventData extends ServiceRef {
  importId: string;
  error: string | null;
}

export interface DrillEventData extends ServiceRef {
  backupId: string;
  reason: string | null;
}

export interface EventPayloads {
  'deployment.queued': DeploymentEventData;
  'deployment.started': DeploymentEventData;
  'deployment.succeeded': DeploymentEventData;
  'deployment.failed': DeploymentEventData;
  'deployment.aborted': DeploymentEventData;
  'deployment.superseded': DeploymentEventData;
  'service.crash_looping': ServiceRef & {
    /** Exits counted within the window. */
    exits: number;
    windowMs: number;
    /** When the loop was first seen (ISO). */
    since: string;
    /** A reminder of a loop already reported (at most one per 30 minutes). */
    reminder: boolean;
    lastExitCode: number | null;
  };
  'service.recovered': ServiceRef & { since: string; exits: number };
  'service.health_failing': ServiceRef & { failures: number; reason: string };
  'service.health_recovered': ServiceRef & { failures: number };
  'database.stopped_unexpectedly': ServiceRef & { engine: string; exitCode: number | null };
  'backup.succeeded': BackupEventData;
  'backup.failed': BackupEventData;
  'restore.succeeded': BackupEventData;
  'restore.failed': BackupEventData;
  'import.succeeded': ImportEventData;
  'import.failed': ImportEventData;
  'drill.passed': DrillEventData;
  'drill.failed': DrillEventData;
  'host.disk_high': { path: string; usedPercent: number; freeBytes: number; totalBytes: number };
  'host.disk_ok': { path: string; usedPercent: number; freeBytes: number; totalBytes: number };
  'server.down': { serverId: string; name: string; address: string | null };
  'server.up': { serverId: string; name: string; address: string | null };
  'api_key.created': { apiKeyId: string; name: string; access: string; projectIds: string[] | null };
  'api_key.deleted': { apiKeyId: string; name: string; access: string; projectIds: string[] | null };
  'token.created': { tokenId: string; userId: string; name: string; scopes: string[] };
  'token.deleted': { tokenId: string; userId: string; name: string; scopes: string[] };
  'auth.signin_new_address': { userId: string; email: string; address: string };
}

/** An event as stored in the outbox and read back: `seq` orders the stream and is its SSE id. */
export interface DomainEvent<T extends EventType = EventType> {
  /** Unique, stable: a webhook's `webhook-id` is derived from it and the channel. */
  id: string;
  seq: number;
  type: T;
  /** null: an event of the install (disk, servers, keys, sign-ins). */
  projectId: string | null;
  occurredAt: Date;
  data: EventPayloads[T];
}

/** An event before the outbox gave it its place. */
export type NewEvent<T extends EventType = EventType> = Omit<DomainEvent<T>, 'seq'>;

/** Where an event about a service happened: its project is the event's. */
export function projectOfEvent<T extends EventType>(type: T, data: EventPayloads[T]): string | null {
  if (eventAudience(type) !== 'project') return null;
  return (data as { projectId?: string }).projectId ?? null;
}
