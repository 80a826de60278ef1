/**
 * One client (a driver's pool) per service, shared by every request to it and closed after it has been
 * idle for a while: requests never open their own connections. A changed connection key (new password,
 * other host) closes the old client and opens a new one.
 */
export class PooledClients<C> {
  private readonly entries = new Map<string, { key: string; client: Promise<C>; timer: NodeJS.Timeout | null; busy: number }>();

  constructor(
    private readonly open: (connectionKey: string) => Promise<C>,
    private readonly close: (client: C) => Promise<void>,
    private readonly idleMs = 60_000,
  ) {}

  /** Runs `work` with the service's client; `connectionKey` is whatever, changed, needs a new client. */
  async use<T>(serviceId: string, connectionKey: string, work: (client: C) => Promise<T>): Promise<T> {
    let entry = this.entries.get(serviceId);
    if (entry && entry.key !== connectionKey) {
      await this.release(serviceId);
      entry = undefined;
    }
    if (!entry) {
      const client = this.open(connectionKey);
      entry = { key: connectionKey, client, timer: null, busy: 0 };
      this.entries.set(serviceId, entry);
      // A client that could not be opened is not kept: the next request tries again.
      client.catch(() => {
        if (this.entries.get(serviceId)?.client === client) this.entries.delete(serviceId);
      });
    }
    const current = entry;
    if (current.timer) clearTimeout(current.timer);
    current.timer = null;
    current.busy++;
    try {
      return await work(await current.client);
    } finally {
      current.busy--;
      if (current.busy === 0 && this.entries.get(serviceId) === current) {
        current.timer = setTimeout(() => void this.release(serviceId), this.idleMs);
        current.timer.unref();
      }
    }
  }

  async release(serviceId: string): Promise<void> {
    const entry = this.entries.get(serviceId);
    if (!entry) return;
    this.entries.delete(serviceId);
    if (entry.timer) clearTimeout(entry.timer);
    const client = await entry.client.catch(() => null);
    if (client) await this.close(client).catch(() => undefined);
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.entries.keys()].map((id) => this.release(id)));
  }

  /** How many services have an open client (tests: pools are reused and closed when idle). */
  get size(): number {
    return this.entries.size;
  }
}
