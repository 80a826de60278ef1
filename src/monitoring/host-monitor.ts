import type { ServiceRef } from '../domain/events.js';
import type { EventPublishing } from '../platform/event-publishing.port.js';
import type { DiskUsage } from './monitoring.ports.js';

/** A live web service's health check: null when it answered (below 500), else why not. */
export interface LiveHealthCheck {
  /** Every web service that has a live container now, with a way to ask it. */
  liveWebServices(): Promise<Array<ServiceRef & { check(signal: AbortSignal): Promise<string | null> }>>;
}

export interface HostMonitorSettings {
  healthFailures: number;
  diskPath: string;
  diskThresholdPercent: number;
}

const CHECK_TIMEOUT_MS = 5_000;
/** The disk is reported fine again only this many points below the threshold, so one at the edge does not flap. */
const DISK_HYSTERESIS = 5;

/**
 * What is looked at on every monitor pass: each live web service's health check (failing after
 * HEALTH_FAILURES misses in a row, reported once, and once again when it passes), and the disk of
 * the data directory (above DISK_THRESHOLD_PERCENT, reported once until it is back below).
 */
export class HostMonitor {
  private readonly misses = new Map<string, number>();
  private readonly failing = new Set<string>();
  private diskHigh = false;

  constructor(
    private readonly publisher: EventPublishing,
    private readonly health: LiveHealthCheck | null,
    private readonly disk: DiskUsage | null,
    private readonly settings: () => HostMonitorSettings,
    private readonly log?: (message: string, extra?: Record<string, unknown>) => void,
  ) {}

  async pass(): Promise<void> {
    await Promise.all([this.checkHealth(), this.checkDisk()]);
  }

  /** Services whose health check fails now. */
  failingServices(): string[] {
    return [...this.failing];
  }

  private async checkHealth(): Promise<void> {
    if (!this.health) return;
    const { healthFailures } = this.settings();
    const services = await this.health.liveWebServices();
    const seen = new Set<string>();
    await Promise.all(
      services.map(async ({ check, ...ref }) => {
        seen.add(ref.serviceId);
        const reason = await check(AbortSignal.timeout(CHECK_TIMEOUT_MS)).catch((error: Error) => error.message || 'no answer');
        if (reason === null) {
          const misses = this.misses.get(ref.serviceId) ?? 0;
          this.misses.delete(ref.serviceId);
          if (this.failing.delete(ref.serviceId))
            await this.publisher.publishQuietly('service.health_recovered', { ...ref, failures: misses }, this.log);
          return;
        }
        const misses = (this.misses.get(ref.serviceId) ?? 0) + 1;
        this.misses.set(ref.serviceId, misses);
        if (misses >= healthFailures && !this.failing.has(ref.serviceId)) {
          this.failing.add(ref.serviceId);
          await this.publisher.publishQuietly('service.health_failing', { ...ref, failures: misses, reason }, this.log);
        }
      }),
    );
    // A service no longer live (stopped, deleted, redeploying) starts again from nothing.
    for (const id of [...this.misses.keys()]) if (!seen.has(id)) this.misses.delete(id);
    for (const id of [...this.failing]) if (!seen.has(id)) this.failing.delete(id);
  }

  private async checkDisk(): Promise<void> {
    if (!this.disk) return;
    const { diskPath, diskThresholdPercent } = this.settings();
    const { totalBytes, freeBytes } = await this.disk.usage(diskPath);
    if (totalBytes <= 0) return;
    const usedPercent = Math.round(((totalBytes - freeBytes) / totalBytes) * 1000) / 10;
    const data = { path: diskPath, usedPercent, freeBytes, totalBytes };
    if (!this.diskHigh && usedPercent > diskThresholdPercent) {
      this.diskHigh = true;
      await this.publisher.publishQuietly('host.disk_high', data, this.log);
    } else if (this.diskHigh && usedPercent <= diskThresholdPercent - DISK_HYSTERESIS) {
      this.diskHigh = false;
      await this.publisher.publishQuietly('host.disk_ok', data, this.log);
    }
  }
}
