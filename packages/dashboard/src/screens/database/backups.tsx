import { useQuery } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { BackupList } from '../../components/backup-table';
import { backupsRefetchInterval, useBackupActions } from '../../components/use-backup-actions';
import { useTRPC, useTRPCClient } from '../../lib/trpc';
import { BackupSchedules } from './backup-schedules';

const STORAGES = ['disk', 'object', 'disk+object'] as const;

/**
 * Backups: the list (states update live), a new one, a restore after confirmation, the file to download,
 * and each backup's last restore drill (run one now; the counts of backups never drilled or failing theirs).
 */
export function Backups({ serviceId }: { serviceId: string }) {
  const trpc = useTRPC();
  const client = useTRPCClient();
  const list = useQuery({ ...trpc.backups.list.queryOptions({ serviceId }), refetchInterval: backupsRefetchInterval });
  const [storage, setStorage] = useState<(typeof STORAGES)[number]>('disk');
  const storageId = useId();
  const actions = useBackupActions({
    listKey: trpc.backups.list.queryKey({ serviceId }),
    target: (backupId) => ({ serviceId, backupId }),
    create: client.backups.create.mutate,
    restore: client.backups.restore.mutate,
    drill: client.backups.drill.mutate,
    remove: client.backups.delete.mutate,
  });
  const { create } = actions;
  return (
    <div className="stack">
      <div className="row">
        <label htmlFor={storageId}>Store in</label>
        <select id={storageId} value={storage} onChange={(e) => setStorage(e.target.value as (typeof STORAGES)[number])}>
          {STORAGES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        <button type="button" className="primary" onClick={() => create.mutate({ serviceId, storage })} disabled={create.isPending}>
          {create.isPending ? <span className="spinner" aria-hidden="true" /> : null}
          Back up
        </button>
      </div>
      <BackupList
        list={list}
        actions={actions}
        label="backups"
        empty="No backups yet."
        notice={(data) =>
          !data.objectStore.connected ? <p className="muted">No object store answers: backups go to the server's disk.</p> : null
        }
        caption="Backups, newest first"
        restoreWarning={(when) => `The database's current data is replaced by the backup of ${when}. Writes made since are lost.`}
        downloadHref={(b) => `/api/services/${serviceId}/database/backups/${b.id}/download`}
      />
      <BackupSchedules serviceId={serviceId} onTriggered={actions.refresh} />
    </div>
  );
}
