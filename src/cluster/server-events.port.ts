import type { ServerRecord } from './server.records.js';

/**
 * Where the cluster reports a server going down and coming back (events `server.down` and
 * `server.up`, payload `{serverId, name, address}`). The composition root gives the events
 * capability's publisher; without one, the platform's log.
 */
export interface ServerEvents {
  serverDown(server: ServerRecord): Promise<void>;
  serverUp(server: ServerRecord): Promise<void>;
}
