import { createNotifiers } from '../../adapters/notify/notifiers.js';
import { SmtpMailer } from '../../adapters/mail/smtp.mailer.js';
import { DEFAULT_PLATFORM_CONFIG, type EventsConfig, type PlatformConfig } from '../../src/index.js';
import { EventDispatcher } from '../../src/events/event-dispatcher.js';
import { EventPublisher } from '../../src/events/event-publisher.js';
import { EventStreamService } from '../../src/events/event-stream.service.js';
import { ChannelSender, type MailerLease } from '../../src/notifications/channel-sender.js';
import { DeliveryWorker, NotificationFanOut } from '../../src/notifications/delivery-worker.js';
import { NotificationService } from '../../src/notifications/notification.service.js';
import { openDatabase, type Database } from '../../src/persistence/database.js';
import type { Clock } from '../../src/platform/clock.port.js';
import type { ServiceDeps } from '../../src/platform/deps.js';
import { LogBus } from '../../src/platform/log-bus.js';
import { SecretBox } from '../../src/platform/secret-box.js';

/**
 * The event pieces (publisher, dispatcher, notifications with the real notifiers) on SQLite, wired
 * by hand: the use-case tests of events, notifications and the audit log drive them directly.
 */
export interface EventsHarness {
  database: Database;
  deps: ServiceDeps;
  publisher: EventPublisher;
  dispatcher: EventDispatcher;
  worker: DeliveryWorker;
  notifications: NotificationService;
  stream: EventStreamService;
  /** Dispatches what is in the outbox and sends what is due, until nothing is left to do now. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

export async function eventsHarness(
  opts: { events?: Partial<EventsConfig>; config?: Partial<PlatformConfig>; clock?: Clock; smtpUrl?: string; dataDir?: string } = {},
): Promise<EventsHarness> {
  const database = await openDatabase({ dataDir: opts.dataDir ?? ':memory:' });
  const config: PlatformConfig = {
    ...DEFAULT_PLATFORM_CONFIG,
    streamPingMs: 200,
    ...opts.config,
    events: { ...DEFAULT_PLATFORM_CONFIG.events, allowPrivateTargets: true, ...opts.events },
  };
  const clock = opts.clock ?? { now: () => new Date() };
  const eventPublisher = new EventPublisher({ store: database.store, clock });
  const deps: ServiceDeps = {
    events: eventPublisher,
    store: database.store,
    secrets: SecretBox.fromSecret('test-secret-key-test-secret-key-0123'),
    clock,
    logBus: new LogBus(),
    config,
  };
  const { notifiers, guard } = createNotifiers({
    allowPrivate: () => deps.config.events.allowPrivateTargets,
    telegramApiUrl: () => deps.config.events.telegramApiUrl,
  });
  const mailer = async (): Promise<MailerLease | null> => {
    if (!opts.smtpUrl) return null;
    const smtp = new SmtpMailer(opts.smtpUrl, 'Slipway <slipway@test>');
    return { mailer: smtp, release: () => smtp.close() };
  };
  const sender = new ChannelSender(deps, new Map(notifiers.map((n) => [n.type, n])), mailer);
  const worker = new DeliveryWorker(deps, sender);
  const publisher = eventPublisher;
  const dispatcher = new EventDispatcher(deps, publisher, [new NotificationFanOut(deps, worker)], {
    retentionMs: () => deps.config.events.retentionDays * 86_400_000,
  });
  const notifications = new NotificationService(deps, sender, worker, guard);
  const stream = new EventStreamService({ store: database.store, clock: deps.clock, pingMs: () => deps.config.streamPingMs }, publisher);
  return {
    database,
    deps,
    publisher,
    dispatcher,
    worker,
    notifications,
    stream,
    async flush() {
      await dispatcher.drain();
      await worker.passOnce();
    },
    async close() {
      await dispatcher.stop();
      await worker.stop();
      await database.close();
    },
  };
}
