/**
 * How a PostgreSQL container archives its WAL when point-in-time recovery is on: `archive_command`
 * copies each finished segment into a spool directory on a volume of its own (cp -p keeps the segment's
 * last-write time, sync, then an atomic rename), which never waits on the destination; the platform
 * ships the spool to the disk or the object store and removes what it stored (WalShipper). Only
 * coreutils, which every postgres image has, run inside the container: the image stays a setting.
 */
export const WAL_SPOOL_DIR = '/var/lib/postgresql/slipway-wal';

/** A segment in flight is `.<name>` (hidden), renamed once copied and synced: the shipper never sees half a file. */
export const ARCHIVE_COMMAND = `cp -p %p ${WAL_SPOOL_DIR}/.%f && sync ${WAL_SPOOL_DIR}/.%f && mv -f ${WAL_SPOOL_DIR}/.%f ${WAL_SPOOL_DIR}/%f`;

/** The spool volume of a service (it outlives deployments, like the data volume). */
export function spoolVolume(prefix: string, serviceId: string): string {
  return `${prefix}-${serviceId}-wal`;
}

/**
 * The server arguments of a database with point-in-time recovery: archiving on, and a segment switch
 * at least every `archiveTimeoutSeconds` while there are writes, so the window's end is never further behind.
 */
export function archiveArgs(archiveTimeoutSeconds: number): string[] {
  return ['-c', 'archive_mode=on', '-c', `archive_command=${ARCHIVE_COMMAND}`, '-c', `archive_timeout=${archiveTimeoutSeconds}`];
}

/** What the deployment adds to a PostgreSQL container whose point-in-time recovery is on (see ContainerLaunch). */
export interface ArchiveMount {
  args: string[];
  volumes: Array<{ name: string; target: string }>;
  /** A file that makes the spool directory the server's (the volume's root is root's until then). */
  files: Array<{ path: string; content: string; mode: number; owner: string }>;
}

export function archiveMount(prefix: string, serviceId: string, archiveTimeoutSeconds: number): ArchiveMount {
  return {
    args: archiveArgs(archiveTimeoutSeconds),
    volumes: [{ name: spoolVolume(prefix, serviceId), target: WAL_SPOOL_DIR }],
    files: [
      {
        path: `${WAL_SPOOL_DIR}/README`,
        content: 'WAL segments waiting to be shipped by Slipway (point-in-time recovery). Do not remove them.\n',
        mode: 0o644,
        owner: 'postgres',
      },
    ],
  };
}

/** A WAL segment's, history file's or backup history file's name, as PostgreSQL writes them into the spool. */
export const WAL_FILE_NAME = /^(?:[0-9A-F]{24}(?:\.[0-9A-F]{8}\.backup|\.partial)?|[0-9A-F]{8}\.history)$/;

/** The timeline a WAL file belongs to (its first 8 hex digits). */
export function timelineOf(name: string): number {
  return Number.parseInt(name.slice(0, 8), 16);
}

/** A WAL segment proper (not a history or backup history file). */
export function isSegment(name: string): boolean {
  return /^[0-9A-F]{24}$/.test(name);
}

/**
 * The data volume a point-in-time restore with `replace` fills: beside the database's own (whose name it
 * starts with, so deleting the service finds it), which stays as it is until the service was swapped
 * onto this one and deployed.
 */
export function restoredVolume(prefix: string, serviceId: string, restoreId: string): string {
  return `${prefix}-${serviceId}-data-pitr-${restoreId.toLowerCase()}`;
}

/** A database's own data volume (deployments' resourceNames names it the same): where it runs unless a restore swapped it. */
export function dataVolumeOf(prefix: string, serviceId: string): string {
  return `${prefix}-${serviceId}-data`;
}
