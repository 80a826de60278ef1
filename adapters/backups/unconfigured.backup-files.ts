import type { BackupFiles } from '../../src/backups/backup-files.port.js';

const NO_DIRECTORY = 'This platform has no backups directory';

/** For a platform built without a backups directory (operator commands, router tests): backups fail saying so. */
export const UNCONFIGURED_BACKUP_FILES: BackupFiles = {
  pathOf: (serviceId, name) => `${serviceId}/${name}`,
  create: () => Promise.reject(new Error(NO_DIRECTORY)),
  commit: () => Promise.resolve(),
  read: () => {
    throw new Error(NO_DIRECTORY);
  },
  size: () => Promise.resolve(null),
  remove: () => Promise.resolve(),
};
