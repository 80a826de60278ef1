import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { Confirm, Empty, ErrorNotice, QueryState, StatusBadge } from '../../components/ui';
import { formatBytes, formatDate } from '../../lib/format';
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
              <div className="table-wrap">
                <table>
                  <caption className="visually-hidden">Backups, newest first</caption>
                  <thead>
                    <tr>
                      <th scope="col">Created</th>
                      <th scope="col">Status</th>
                      <th scope="col">Storage</th>
                      <th scope="col">Size</th>
                      <th scope="col">Last drill</th>
                      <th scope="col">Actions</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.backups.map((b) => {
                      const when = formatDate(b.createdAt);
                      return (
                        <tr key={b.id}>
                          <td>
                            {when} <span className="muted">({b.trigger})</span>
                            {b.error ? <div className="error-text">{b.error}</div> : null}
                          </td>
                          <td>
                            <StatusBadge status={b.status} label="Backup status" />
                          </td>
                          <td>{b.storage}</td>
                          <td className="num">{b.status === 'succeeded' ? formatBytes(b.sizeBytes) : '-'}</td>
                          <td>
                            {b.drill ? (
                              <>
                                <StatusBadge status={b.drill.status} label="Drill status" />{' '}
                                <span className="muted">{formatDate(b.drill.finishedAt ?? b.drill.requestedAt)}</span>
                                {b.drill.reason ? (
                                  <div className={b.drill.status === 'failed' ? 'error-text' : 'muted'}>{b.drill.reason}</div>
                                ) : null}
                              </>
                            ) : (
                              <span className="muted">never</span>
                            )}
                          </td>
                          <td>
                            {b.status === 'succeeded' ? (
                              <div className="row">
                                <button
                                  type="button"
                                  aria-label={`Drill backup of ${when}`}
                                  onClick={() => drill.mutate({ serviceId, backupId: b.id })}
                                  disabled={drill.isPending || b.drill?.status === 'queued' || b.drill?.status === 'running'}
                                >
                                  Drill
                                </button>
                                <Confirm
                                  trigger={
                                    <button type="button" aria-label={`Restore backup of ${when}`}>
                                      Restore
                                    </button>
                                  }
                                  title="Restore this backup?"
                                  description={
                                    <p>The database's current data is replaced by the backup of {when}. Writes made since are lost.</p>
                                  }
                                  action="Restore"
                                  onConfirm={() => restore.mutateAsync({ serviceId, backupId: b.id })}
                                />
                                <a
                                  className="button"
                                  href={`/api/services/${serviceId}/database/backups/${b.id}/download`}
                                  download
                                  aria-label={`Download backup of ${when}`}
                                >
                                  Download
                                </a>
                                <Confirm
                                  trigger={
                                    <button type="button" aria-label={`Delete backup of ${when}`}>
                                      Delete
                                    </button>
                                  }
                                  title="Delete this backup?"
                                  description={<p>Its file is removed from every place it is stored.</p>}
                                  action="Delete backup"
                                  onConfirm={() => remove.mutateAsync({ serviceId, backupId: b.id })}
                                />
                              </div>
                            ) : null}
                          </td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              </div>
            )}
          </>
        )}
      </QueryState>
      <BackupSchedules serviceId={serviceId} onTriggered={refresh} />
    </div>
  );
}
