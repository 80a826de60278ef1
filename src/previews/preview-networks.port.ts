import type { ServiceRecord } from '../domain/types.js';

/** A parent's database joined to (and taken off) a preview environment's network: previews.databases `shared`. */
export interface PreviewNetworks {
  link(database: ServiceRecord, environmentId: string): Promise<void>;
  unlink(database: ServiceRecord, environmentId: string): Promise<void>;
}
