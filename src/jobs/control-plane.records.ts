/**
 * Platform processes sharing one database (issue 31, "two or more platform processes"): each one
 * registers itself and beats a heartbeat; job claims name the process that holds them, so another
 * process settles a job only once its holder is gone; leases give one process a duty at a time.
 */
export interface ControlPlaneRecord {
  id: string;
  hostname: string;
  pid: number;
  startedAt: Date;
  heartbeatAt: Date;
}

/** One running job's holder. Inserting the row is the claim: the primary key lets one process have it. */
export interface JobClaimRecord {
  jobId: string;
  kind: string;
  owner: string;
  claimedAt: Date;
}

/** A duty only one process performs at a time (the deploy runner and the runtime it keeps). */
export interface LeaseRecord {
  name: string;
  holder: string;
  expiresAt: Date;
}
