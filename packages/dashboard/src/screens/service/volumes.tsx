import { useQuery } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { BackupList } from '../../components/backup-table';
import { Empty, QueryState } from '../../components/ui';
import { backupsRefetchInterval, useBackupActions } from '../../components/use-backup-actions';
import { useTRPC, useTRPCClient } from '../../lib/trpc';
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
  const client = useTRPCClient();
  const input = { serviceId, name };
  const list = useQuery({ ...trpc.volumes.backups.queryOptions(input), refetchInterval: backupsRefetchInterval });
  const [storage, setStorage] = useState<(typeof STORAGES)[number]>('disk');
  const [mode, setMode] = useState<(typeof MODES)[number]>('stopped');
  const storageId = useId();
  const modeId = useId();
  const headingId = useId();
  const actions = useBackupActions({
    listKey: trpc.volumes.backups.queryKey(input),
    target: (backupId) => ({ ...input, backupId }),
    create: client.volumes.createBackup.mutate,
    restore: client.volumes.restore.mutate,
    drill: client.volumes.drill.mutate,
    remove: client.volumes.deleteBackup.mutate,
  });
  const { create } = actions;
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
      <BackupList
        list={list}
        actions={actions}
        label={`backups of volume ${name}`}
        empty="No backups of this volume yet."
        caption={`Backups of volume ${name}, newest first`}
        restoreWarning={(when) =>
          `The volume's files are replaced by the backup of ${when}; the service is stopped while they are swapped. Changes made since are lost.`
        }
        downloadHref={(b) => `/api/services/${serviceId}/volumes/${name}/backups/${b.id}/download`}
      />
    </section>
  );
}
