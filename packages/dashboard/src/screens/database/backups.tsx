import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { BackupTable } from '../../components/backup-table';
import { Empty, ErrorNotice, QueryState } from '../../components/ui';
import { formatDate } from '../../lib/format';
import { useTRPC } from '../../lib/trpc';
import { BackupSchedules } from './backup-schedules';

const STORAGES = ['disk', 'object', 'disk+object'] as const;

/**
 * Backups: the list (states update live), a new one, a restore after confirmation, the file to download,
 * and each backup's last restore drill (run one now; the counts of backups never drilled or failing theirs).
 */
export function Backups({ serviceId }: { serviceId: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const list = useQuery({
    ...trpc.backups.list.queryOptions({ serviceId }),
    refetchInterval: (q) =>
      q.state.data?.backups.some((b) => b.status === 'running' || b.drill?.status === 'queued' || b.drill?.status === 'running')
        ? 2_000
        : 15_000,
  });
  const [storage, setStorage] = useState<(typeof STORAGES)[number]>('disk');
  const [restored, setRestored] = useState<string | null>(null);
  const storageId = useId();
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.backups.list.queryKey({ serviceId }) });
  const create = useMutation(trpc.backups.create.mutationOptions({ onSuccess: refresh }));
  const restore = useMutation(
    trpc.backups.restore.mutationOptions({
      onSuccess: (r) => {
        setRestored(r.restoredAt);
        return refresh();
      },
    }),
  );
  const remove = useMutation(trpc.backups.delete.mutationOptions({ onSuccess: refresh }));
  const drill = useMutation(trpc.backups.drill.mutationOptions({ onSuccess: refresh }));
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
      <ErrorNotice error={create.error ?? remove.error ?? drill.error} />
      {restored ? (
        <p className="alert ok" role="status">
          Restored at {formatDate(restored)}.
        </p>
      ) : null}
      <QueryState query={list} label="backups">
        {(data) => (
          <>
            {!data.objectStore.connected ? <p className="muted">No object store answers: backups go to the server's disk.</p> : null}
            {data.drills.neverDrilled > 0 || data.drills.failed > 0 ? (
              <p className={data.drills.failed > 0 ? 'alert' : 'muted'} role="status">
                Restore drills: {data.drills.failed} failed, {data.drills.neverDrilled} never drilled.
              </p>
            ) : null}
            {data.backups.length === 0 ? (
              <Empty>No backups yet.</Empty>
            ) : (
              <BackupTable
                backups={data.backups}
                caption="Backups, newest first"
                restoreWarning={(when) => `The database's current data is replaced by the backup of ${when}. Writes made since are lost.`}
                downloadHref={(b) => `/api/services/${serviceId}/database/backups/${b.id}/download`}
                drillPending={drill.isPending}
                onDrill={(b) => drill.mutate({ serviceId, backupId: b.id })}
                onRestore={(b) => restore.mutateAsync({ serviceId, backupId: b.id })}
                onDelete={(b) => remove.mutateAsync({ serviceId, backupId: b.id })}
              />
            )}
          </>
        )}
      </QueryState>
      <BackupSchedules serviceId={serviceId} onTriggered={refresh} />
    </div>
  );
}
