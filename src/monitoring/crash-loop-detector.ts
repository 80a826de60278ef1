import type { ServiceRef } from '../domain/events.js';
import type { EventPublishing } from '../platform/event-publishing.port.js';
import type { Clock } from '../platform/clock.port.js';
import type { ContainerExit } from './monitoring.ports.js';

/** What the detector asks of the platform about the service a container belonged to. */
export interface LiveServiceLookup {
  /** The service, when it exists, is not stopped on purpose, and the exited container is its live deployment's. */
  liveService(exit: ContainerExit): Promise<(ServiceRef & { engine: string | null }) | null>;
  /** Whether the service's live container runs now. */
  running(serviceId: string): Promise<boolean>;
}

export interface CrashLoopSettings {
  exits: number;
  windowMs: number;
  reminderMs: number;
}

interface Episode {
  ref: ServiceRef;
  exits: number[];
  /** Set once the loop was reported. */
  looping: { since: number; lastAlertAt: number; total: number } | null;
  lastExitCode: number | null;
}

/**
 * A live container exiting CRASH_LOOP_EXITS times within CRASH_LOOP_WINDOW_MS is a crash loop: one
 * `service.crash_looping` event, a reminder at most every 30 minutes while it goes on, and one
 * `service.recovered` once the service ran a whole window without exiting. A database's container
 * exiting at all (its service not stopped through the API) is `database.stopped_unexpectedly`, once
 * per episode. Exits of containers the platform replaced or stopped are not counted. Only services
 * with a recent exit are held in memory.
 */
export class CrashLoopDetector {
  private readonly episodes = new Map<string, Episode>();

  constructor(
    private readonly clock: Clock,
    private readonly publisher: EventPublishing,
    private readonly lookup: LiveServiceLookup,
    private readonly settings: () => CrashLoopSettings,
    private readonly log?: (message: string, extra?: Record<string, unknown>) => void,
  ) {}

  async onExit(exit: ContainerExit): Promise<void> {
    const service = await this.lookup.liveService(exit);
    if (!service) return;
    const { exits: threshold, windowMs, reminderMs } = this.settings();
    const now = this.clock.now().getTime();
    const { engine, ...ref } = service;
    let episode = this.episodes.get(ref.serviceId);
    const fresh = !episode || (episode.looping === null && episode.exits.every((at) => now - at > windowMs));
    if (!episode) {
      episode = { ref, exits: [], looping: null, lastExitCode: null };
      this.episodes.set(ref.serviceId, episode);
    }
    episode.ref = ref;
    episode.lastExitCode = exit.exitCode;
    episode.exits = [...episode.exits.filter((at) => now - at <= windowMs), now];
    if (engine && fresh)
      await this.publisher.publishQuietly('database.stopped_unexpectedly', { ...ref, engine, exitCode: exit.exitCode }, this.log);
    if (episode.looping) {
      episode.looping.total++;
      if (now - episode.looping.lastAlertAt >= reminderMs) {
        episode.looping.lastAlertAt = now;
        await this.alert(episode, windowMs, true);
      }
      return;
    }
    if (episode.exits.length >= threshold) {
      episode.looping = { since: episode.exits[0]!, lastAlertAt: now, total: episode.exits.length };
      await this.alert(episode, windowMs, false);
    }
  }

  /** Looping services that ran a whole window without exiting have recovered; quiet ones are forgotten. */
  async tick(): Promise<void> {
    const { windowMs } = this.settings();
    const now = this.clock.now().getTime();
    for (const [serviceId, episode] of this.episodes) {
      const last = episode.exits.at(-1) ?? 0;
      if (now - last < windowMs) continue;
      if (episode.looping) {
        if (!(await this.lookup.running(serviceId).catch(() => false))) continue;
        await this.publisher.publishQuietly(
          'service.recovered',
          { ...episode.ref, since: new Date(episode.looping.since).toISOString(), exits: episode.looping.total },
          this.log,
        );
      }
      this.episodes.delete(serviceId);
    }
  }

  /** The services now reported as crash-looping (health and overview answers). */
  looping(): string[] {
    return [...this.episodes].filter(([, e]) => e.looping).map(([id]) => id);
  }

  private alert(episode: Episode, windowMs: number, reminder: boolean): Promise<void> {
    const looping = episode.looping!;
    return this.publisher.publishQuietly(
      'service.crash_looping',
      {
        ...episode.ref,
        exits: episode.exits.length,
        windowMs,
        since: new Date(looping.since).toISOString(),
        reminder,
        lastExitCode: episode.lastExitCode,
      },
      this.log,
    );
  }
}
