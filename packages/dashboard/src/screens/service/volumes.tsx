import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { BackupTable } from '../../components/backup-table';
import { Empty, ErrorNotice, QueryState } from '../../components/ui';
import { formatDate } from '../../lib/format';
import { useTRPC } from '../../lib/trpc';
import { useServiceOverview } from './use-service';

const STORAGES = ['disk', 'object', 'disk+object'] as const;
const MODES = ['stopped', 'live'] as const;

/** A service's named volumes, each with its backups: back up now (stopped or live), drill, restore, download, delete. */
export default function Volumes() {
  const { serviceId } = useServiceOverview();
  const trpc = useTRPC();
  const volumes = useQuery(trpc.volumes.list.queryOptions({ serviceId }));
  return (
    <div className="stack">
      <QueryState query={volumes} label="volumes">
        {(data) =>
          data.volumes.length === 0 ? (
            <Empty>This service has no named volumes: add them with the volumes field of the service (API or CLI).</Empty>
          ) : (
            data.volumes.map((v) => <VolumeBackups key={v.name} serviceId={serviceId} name={v.name} mountPath={v.mountPath} />)
          )
        }
      </QueryState>
    </div>
  );
}

function VolumeBackups({ serviceId, name, mountPath }: { serviceId: string; name: string; mountPath: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const input = { serviceId, name };
  const list = useQuery({
    ...trpc.volumes.backups.queryOptions(input),
    refetchInterval: (q) =>
      q.state.data?.backups.some((b) => b.status === 'running' || b.drill?.status === 'queued' || b.drill?.status === 'running')
        ? 2_000
        : 15_000,
  });
  const [storage, setStorage] = useState<(typeof STORAGES)[number]>('disk');
  const [mode, setMode] = useState<(typeof MODES)[number]>('stopped');
  const [restored, setRestored] = useState<string | null>(null);
  const storageId = useId();
  const modeId = useId();
  const headingId = useId();
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.volumes.backups.queryKey(input) });
  const create = useMutation(trpc.volumes.createBackup.mutationOptions({ onSuccess: refresh }));
  const restore = useMutation(
    trpc.volumes.restore.mutationOptions({
      onSuccess: (r) => {
        setRestored(r.restoredAt);
        return refresh();
      },
    }),
  );
  const remove = useMutation(trpc.volumes.deleteBackup.mutationOptions({ onSuccess: refresh }));
  const drill = useMutation(trpc.volumes.drill.mutationOptions({ onSuccess: refresh }));
  return (
    <section className="card stack" aria-labelledby={headingId}>
      <h2 id={headingId}>
        Volume {name} <span className="muted">at {mountPath}</span>
      </h2>
      <div className="row">
        <label htmlFor={storageId}>Store in</label>
        <select id={storageId} value={storage} onChange={(e) => setStorage(e.target.value as (typeof STORAGES)[number])}>
          {STORAGES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        <label htmlFor={modeId}>Snapshot</label>
        <select id={modeId} value={mode} onChange={(e) => setMode(e.target.value as (typeof MODES)[number])}>
          <option value="stopped">stopped (consistent; the service stops for it)</option>
          <option value="live">live (the service keeps running)</option>
        </select>
        <button
          type="button"
          className="primary"
          aria-label={`Back up volume ${name}`}
          onClick={() => create.mutate({ ...input, storage, mode })}
          disabled={create.isPending}
        >
          {create.isPending ? <span className="spinner" aria-hidden="true" /> : null}
          Back up
        </button>
      </div>
      <ErrorNotice error={create.error ?? remove.error ?? drill.error ?? restore.error} />
      {restored ? (
        <p className="alert ok" role="status">
          Restored at {formatDate(restored)}.
        </p>
      ) : null}
      <QueryState query={list} label={`backups of volume ${name}`}>
        {(data) => (
          <>
            {data.drills.neverDrilled > 0 || data.drills.failed > 0 ? (
              <p className={data.drills.failed > 0 ? 'alert' : 'muted'} role="status">
                Restore drills: {data.drills.failed} failed, {data.drills.neverDrilled} never drilled.
              </p>
            ) : null}
            {data.backups.length === 0 ? (
              <Empty>No backups of this volume yet.</Empty>
            ) : (
              <BackupTable
                backups={data.backups}
                caption={`Backups of volume ${name}, newest first`}
                restoreWarning={(when) =>
                  `The volume's files are replaced by the backup of ${when}; the service is stopped while they are swapped. Changes made since are lost.`
                }
                downloadHref={(b) => `/api/services/${serviceId}/volumes/${name}/backups/${b.id}/download`}
                drillPending={drill.isPending}
                onDrill={(b) => drill.mutate({ ...input, backupId: b.id })}
                onRestore={(b) => restore.mutateAsync({ ...input, backupId: b.id })}
                onDelete={(b) => remove.mutateAsync({ ...input, backupId: b.id })}
              />
            )}
          </>
        )}
      </QueryState>
    </section>
  );
}
