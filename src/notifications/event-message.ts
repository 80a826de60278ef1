import type { DomainEvent, EventSeverity, EventType } from '../domain/events.js';
import { presentEvent } from '../events/event-views.js';
import type { NotificationMessage } from './notifier.port.js';

type Rendered = Pick<NotificationMessage, 'title' | 'text' | 'severity' | 'fields'>;

const short = (sha: string | null) => (sha ? sha.slice(0, 12) : null);
const minutes = (ms: unknown) => `${Math.round(Number(ms) / 60_000)} min`;

function field(name: string, value: string | number | null | undefined): Array<{ name: string; value: string }> {
  return value === null || value === undefined || value === '' ? [] : [{ name, value: String(value) }];
}

/** How each event reads in a chat message or a mail: a title, a sentence, how loud, and its facts. */
export function renderEvent(event: DomainEvent): Rendered {
  const e = event as DomainEvent<EventType>;
  // Each case reads the fields of its own type's payload (EventPayloads in src/domain/events.ts).
  const d = e.data as unknown as Record<string, never>;
  const service = (d.serviceName as string | undefined) ?? '';
  const serviceFields = [...field('Service', d.serviceName), ...field('Service id', d.serviceId), ...field('Project id', d.projectId)];
  const r = (title: string, text: string, severity: EventSeverity, fields: Rendered['fields'] = []): Rendered => ({
    title,
    text,
    severity,
    fields: [...serviceFields, ...fields],
  });
  switch (e.type) {
    case 'deployment.queued':
      return r(`Deployment queued: ${service}`, `A deployment of ${service} is queued.`, 'info', deploymentFields(d));
    case 'deployment.started':
      return r(`Deployment started: ${service}`, `A deployment of ${service} started.`, 'info', deploymentFields(d));
    case 'deployment.succeeded':
      return r(`Deployed: ${service}`, `${service} is live with its new deployment.`, 'success', deploymentFields(d));
    case 'deployment.failed':
      return r(`Deployment failed: ${service}`, `The deployment of ${service} failed${reason(d)}`, 'error', deploymentFields(d));
    case 'deployment.aborted':
      return r(`Deployment aborted: ${service}`, `The deployment of ${service} was aborted${reason(d)}`, 'warning', deploymentFields(d));
    case 'deployment.superseded':
      return r(
        `Deployment superseded: ${service}`,
        `A queued deployment of ${service} was superseded by a newer one.`,
        'info',
        deploymentFields(d),
      );
    case 'service.crash_looping':
      return r(
        `${d.reminder ? 'Still crash-looping' : 'Crash loop'}: ${service}`,
        `${service} exited ${d.exits} times within ${minutes(d.windowMs)} after it went live${d.reminder ? `; looping since ${d.since}` : ''}.`,
        'error',
        [...field('Last exit code', d.lastExitCode), ...field('Since', d.since)],
      );
    case 'service.recovered':
      return r(
        `Recovered: ${service}`,
        `${service} has been running without exiting again; it was crash-looping since ${d.since}.`,
        'success',
      );
    case 'service.health_failing':
      return r(`Health check failing: ${service}`, `${service} failed ${d.failures} health checks in a row: ${d.reason}`, 'error');
    case 'service.health_recovered':
      return r(`Health check passing: ${service}`, `${service} answers its health check again.`, 'success');
    case 'database.stopped_unexpectedly':
      return r(`Database stopped: ${service}`, `The ${d.engine} database ${service} stopped without being asked to.`, 'error', [
        ...field('Exit code', d.exitCode),
      ]);
    case 'backup.succeeded':
      return r(`Backup succeeded: ${service}`, `A backup of ${service} is stored (${d.storage}).`, 'success', backupFields(d));
    case 'backup.failed':
      return r(`Backup failed: ${service}`, `A backup of ${service} failed${errorOf(d)}`, 'error', backupFields(d));
    case 'restore.succeeded':
      return r(`Restore succeeded: ${service}`, `${service} was restored from a backup.`, 'success', backupFields(d));
    case 'restore.failed':
      return r(`Restore failed: ${service}`, `A restore of ${service} failed${errorOf(d)}`, 'error', backupFields(d));
    case 'import.succeeded':
      return r(`Import succeeded: ${service}`, `Data was imported into ${service}.`, 'success', field('Import', d.importId));
    case 'import.failed':
      return r(`Import failed: ${service}`, `An import into ${service} failed${errorOf(d)}`, 'error', field('Import', d.importId));
    case 'drill.passed':
      return r(
        `Restore drill passed: ${service}`,
        `The newest backup of ${service} restored and checked out.`,
        'success',
        field('Backup', d.backupId),
      );
    case 'drill.failed':
      return r(
        `Restore drill failed: ${service}`,
        `The restore drill of ${service} failed${reason(d)}`,
        'error',
        field('Backup', d.backupId),
      );
    case 'host.disk_high':
      return r(`Disk ${d.usedPercent}% full`, `The disk of ${d.path} is ${d.usedPercent}% full.`, 'warning', diskFields(d));
    case 'host.disk_ok':
      return r(`Disk back to ${d.usedPercent}%`, `The disk of ${d.path} is ${d.usedPercent}% full again.`, 'success', diskFields(d));
    case 'server.down':
      return r(`Server down: ${d.name}`, `The server ${d.name} stopped answering.`, 'error', [
        ...field('Server id', d.serverId),
        ...field('Address', d.address),
      ]);
    case 'server.up':
      return r(`Server up: ${d.name}`, `The server ${d.name} answers again.`, 'success', [
        ...field('Server id', d.serverId),
        ...field('Address', d.address),
      ]);
    case 'api_key.created':
      return r(`API key created: ${d.name}`, `An API key "${d.name}" (${d.access}) was created.`, 'info', field('Key id', d.apiKeyId));
    case 'api_key.deleted':
      return r(`API key deleted: ${d.name}`, `The API key "${d.name}" was deleted.`, 'info', field('Key id', d.apiKeyId));
    case 'token.created':
      return r(`Personal token created: ${d.name}`, `A personal token "${d.name}" was created.`, 'info', [
        ...field('Token id', d.tokenId),
        ...field('User id', d.userId),
      ]);
    case 'token.deleted':
      return r(`Personal token deleted: ${d.name}`, `The personal token "${d.name}" was deleted.`, 'info', [
        ...field('Token id', d.tokenId),
        ...field('User id', d.userId),
      ]);
    case 'auth.signin_new_address':
      return r(
        `Sign-in from a new address`,
        `${d.email} signed in from ${d.address}, an address not seen for this account before.`,
        'warning',
        [...field('User id', d.userId)],
      );
  }
}

function deploymentFields(d: Record<string, unknown>) {
  return [
    ...field('Deployment', d.deploymentId as string),
    ...field('Trigger', d.trigger as string),
    ...field('Commit', short(d.commitSha as string | null)),
  ];
}
function backupFields(d: Record<string, unknown>) {
  return [
    ...field('Backup', d.backupId as string),
    ...field('Storage', d.storage as string),
    ...field('Size (bytes)', d.sizeBytes as number | null),
  ];
}
function diskFields(d: Record<string, unknown>) {
  return [...field('Free (bytes)', d.freeBytes as number), ...field('Total (bytes)', d.totalBytes as number)];
}
const reason = (d: Record<string, unknown>) => (d.reason ? `: ${d.reason}` : '.');
const errorOf = (d: Record<string, unknown>) => (d.error ? `: ${d.error}` : '.');

/** The message of one delivery of an event. */
export function messageOf(deliveryId: string, event: DomainEvent): NotificationMessage {
  return { id: deliveryId, eventType: event.type, occurredAt: event.occurredAt, ...renderEvent(event), event: presentEvent(event) };
}

/** The message `POST .../test` sends. */
export function testMessage(deliveryId: string, channelName: string, now: Date): NotificationMessage {
  return {
    id: deliveryId,
    eventType: 'notification.test',
    occurredAt: now,
    title: 'Slipway test message',
    text: `This is a test message to the channel "${channelName}". If you can read it, the channel works.`,
    severity: 'info',
    fields: [{ name: 'Channel', value: channelName }],
    event: null,
  };
}
