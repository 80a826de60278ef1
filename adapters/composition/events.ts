import { AuditService } from '../../src/audit/audit.service.js';
import { CrashLoopDetector, type LiveServiceLookup } from '../../src/monitoring/crash-loop-detector.js';
import { HostMonitor, type LiveHealthCheck } from '../../src/monitoring/host-monitor.js';
import type { ContainerExits, DiskUsage } from '../../src/monitoring/monitoring.ports.js';
import { ChannelSender, type MailerLease } from '../../src/notifications/channel-sender.js';
import { DeliveryWorker, NotificationFanOut } from '../../src/notifications/delivery-worker.js';
import { NotificationService } from '../../src/notifications/notification.service.js';
import type { Notifier, TargetGuard } from '../../src/notifications/notifier.port.js';
import type { ServiceDeps } from '../../src/platform/deps.js';
import { EventDispatcher } from '../../src/events/event-dispatcher.js';
import type { EventPublisher } from '../../src/events/event-publisher.js';
import { EventStreamService } from '../../src/events/event-stream.service.js';

/** The ports of events, notifications and monitoring: adapters/notify, adapters/docker, adapters/host. */
export interface EventPorts {
  notifiers?: Notifier[];
  guard?: TargetGuard | null;
  /** The SMTP mailer for email channels, per send (the settings' server, else SMTP_URL's). */
  mailer?: () => Promise<MailerLease | null>;
  exits?: ContainerExits | null;
  disk?: DiskUsage | null;
  live?: LiveServiceLookup | null;
  health?: LiveHealthCheck | null;
  log?: (message: string, extra?: Record<string, unknown>) => void;
  /** Whether this process is alone on the database (the control plane's view): the outbox is then polled seldom. */
  alone?: () => boolean;
}

/**
 * The event capability's use cases and loops, built from the deps and the one publisher (the deps'
 * `events`) and its ports: the dispatcher and delivery worker, the notifications API, the event
 * stream, the audit log, and the monitors that raise runtime events. `start`/`stop` run the loops.
 */
export function createEventServices(deps: ServiceDeps, publisher: EventPublisher, ports: EventPorts) {
  const sender = new ChannelSender(deps, new Map((ports.notifiers ?? []).map((n) => [n.type, n])), ports.mailer ?? (async () => null));
  const worker = new DeliveryWorker(deps, sender, ports.log);
  const dispatcher = new EventDispatcher(deps, publisher, [new NotificationFanOut(deps, worker)], {
    retentionMs: () => deps.config.events.retentionDays * 86_400_000,
    log: ports.log,
    ...(ports.alone ? { alone: ports.alone } : {}),
  });
  const notifications = new NotificationService(deps, sender, worker, ports.guard ?? null);
  const eventStream = new EventStreamService({ store: deps.store, clock: deps.clock, pingMs: () => deps.config.streamPingMs }, publisher);
  const audit = new AuditService(deps, ports.log);
  const crashLoops = ports.live
    ? new CrashLoopDetector(
        deps.clock,
        publisher,
        ports.live,
        () => ({
          exits: deps.config.events.crashLoopExits,
          windowMs: deps.config.events.crashLoopWindowMs,
          reminderMs: deps.config.events.crashLoopReminderMs,
        }),
        ports.log,
      )
    : null;
  const monitor = new HostMonitor(publisher, ports.health ?? null, ports.disk ?? null, () => deps.config.events, ports.log);
  let stopWatching: (() => void) | null = null;
  const timers: NodeJS.Timeout[] = [];
  const running = new Map<string, Promise<void>>();
  /** One pass of a loop at a time: a slow one is not stacked. */
  const once = (name: string, work: () => Promise<void>) => () => {
    if (running.has(name)) return;
    running.set(
      name,
      work()
        .catch((error: Error) => ports.log?.(`the ${name} pass failed`, { error: error.message }))
        .finally(() => running.delete(name)),
    );
  };
  const every = (ms: number, fn: () => void) => {
    const timer = setInterval(fn, ms);
    timer.unref?.();
    timers.push(timer);
  };
  const startLoops = (): void => {
    dispatcher.start();
    worker.start();
    if (crashLoops && ports.exits)
      stopWatching = ports.exits.watch(
        (exit) =>
          void crashLoops
            .onExit(exit)
            .catch((error: Error) => ports.log?.('a container exit could not be looked at', { error: error.message })),
        ports.log,
      );
    const interval = deps.config.events.monitorIntervalMs;
    if (interval > 0)
      every(
        interval,
        once('monitor', () => monitor.pass()),
      );
    // Recoveries from a crash loop are looked for every 10 s, or four times a window when it is
    // shorter, so a recovery is told within a quarter window of when it is due.
    if (crashLoops)
      every(
        Math.max(250, Math.min(10_000, Math.floor(deps.config.events.crashLoopWindowMs / 4))),
        once('crash-loop', () => crashLoops.tick()),
      );
  };
  const stopLoops = async (): Promise<void> => {
    stopWatching?.();
    stopWatching = null;
    for (const timer of timers.splice(0)) clearInterval(timer);
    await Promise.allSettled(running.values());
    await dispatcher.stop();
    await worker.stop();
  };
  return {
    publisher,
    notifications,
    eventStream,
    audit,
    dispatcher,
    deliveries: worker,
    crashLoops,
    monitor,
    /**
     * The dispatcher, the delivery worker, the exit watcher and the monitor pass. The composition root
     * runs them in the one process leading `events` among those on one database: two exit watchers
     * would alert twice, two monitors report every failing check twice.
     */
    start: startLoops,
    stop: stopLoops,
  };
}

export type EventServices = ReturnType<typeof createEventServices>;
