import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useId, useState } from 'react';
import { ErrorNotice, Field, QueryState, StatusBadge } from '../../components/ui';
import { fieldError, formError } from '../../lib/api-error';
import { formatBytes, formatDate } from '../../lib/format';
import { useTRPC } from '../../lib/trpc';

const SETTINGS_FIELDS = ['enabled', 'storage', 'retentionDays'] as const;

/**
 * Point-in-time recovery of a PostgreSQL or TimescaleDB database: whether WAL is archived and where, the
 * window a restore can reach, the archive's lag, the last base backup; the settings; a restore to a second.
 */
export function PointInTime({ serviceId }: { serviceId: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const pitr = useQuery({ ...trpc.pitr.get.queryOptions({ serviceId }), refetchInterval: 15_000 });
  const [enabled, setEnabled] = useState(false);
  const [storage, setStorage] = useState('disk');
  const [retention, setRetention] = useState('');
  const [at, setAt] = useState('');
  const enabledId = useId();
  const storageId = useId();
  const current = pitr.data?.pitr;
  useEffect(() => {
    if (!current) return;
    setEnabled(current.enabled);
    setStorage(current.storage);
    setRetention(String(current.retentionDays));
  }, [current]);
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.pitr.get.queryKey({ serviceId }) });
  const save = useMutation(trpc.pitr.put.mutationOptions({ onSuccess: refresh }));
  const restore = useMutation(trpc.pitr.restore.mutationOptions({ onSuccess: refresh }));
  const submitSettings = (e: React.FormEvent) => {
    e.preventDefault();
    const days = retention.trim() === '' ? undefined : Number(retention);
    save.mutate({ serviceId, enabled, storage, ...(days === undefined ? {} : { retentionDays: days }) });
  };
  const submitRestore = (e: React.FormEvent) => {
    e.preventDefault();
    restore.mutate({ serviceId, at: at.trim() });
  };
  return (
    <div className="stack">
      <QueryState query={pitr} label="point-in-time recovery">
        {({ pitr: p }) => (
          <section className="card stack" aria-label="Archive status">
            <p>
              <StatusBadge status={p.enabled ? 'active' : 'stopped'} label="Point-in-time recovery" />{' '}
              {p.enabled ? `WAL archived to ${p.storage}, kept ${p.retentionDays} days` : 'WAL is not archived'}
            </p>
            <p>
              Recoverable window:{' '}
              {p.window ? `${formatDate(p.window.earliest)} to ${formatDate(p.window.latest)}` : 'nothing can be reached yet'}
            </p>
            <p className={p.lag.lagging ? 'alert' : 'muted'} role="status">
              {p.lag.pendingSegments} WAL segments waiting ({formatBytes(p.lag.pendingBytes)}), the oldest for {p.lag.seconds} s
              {p.lag.lastError ? `: ${p.lag.lastError}` : ''}
            </p>
            <p className="muted">
              {p.archivedSegments} segments archived ({formatBytes(p.archivedBytes)}). Last base backup:{' '}
              {p.lastBaseBackup ? `${p.lastBaseBackup.status}, ${formatDate(p.lastBaseBackup.createdAt)}` : 'none yet'}
              {p.nextBaseAt ? `; next ${formatDate(p.nextBaseAt)}` : ''}.
            </p>
          </section>
        )}
      </QueryState>
      <form className="stack" onSubmit={submitSettings} noValidate aria-label="Point-in-time recovery settings">
        <h2>Settings</h2>
        <div className="field">
          <label className="check" htmlFor={enabledId}>
            <input id={enabledId} type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} /> Archive WAL (takes
            effect at the next deployment)
          </label>
          {fieldError(save.error, 'enabled') ? (
            <span className="error" role="alert">
              {fieldError(save.error, 'enabled')}
            </span>
          ) : null}
        </div>
        <div className="field">
          <label htmlFor={storageId}>Archive to</label>
          <select id={storageId} value={storage} onChange={(e) => setStorage(e.target.value)}>
            <option value="disk">disk</option>
            <option value="object">object store</option>
            {storage !== 'disk' && storage !== 'object' ? <option value={storage}>storage instance {storage}</option> : null}
          </select>
        </div>
        <Field label="Keep (days)" name="retentionDays" inputMode="numeric" value={retention} onChange={setRetention} error={save.error} />
        <ErrorNotice error={formError(save.error, SETTINGS_FIELDS)} />
        <div>
          <button type="submit" className="primary" disabled={save.isPending}>
            Save recovery settings
          </button>
        </div>
      </form>
      <form className="stack" onSubmit={submitRestore} noValidate aria-label="Point-in-time restore">
        <h2>Restore to a second</h2>
        <Field
          label="Restore to"
          name="at"
          value={at}
          onChange={setAt}
          error={restore.error}
          placeholder="2026-11-28T12:00:00Z"
          hint="An ISO time with its zone, inside the window above; restored into a new database service beside this one."
        />
        <ErrorNotice error={formError(restore.error, ['at'])} />
        {restore.data ? (
          <p className="alert ok" role="status">
            Restore {restore.data.restore.status}: to {formatDate(restore.data.restore.at)}.
          </p>
        ) : null}
        <div>
          <button type="submit" disabled={restore.isPending || !at.trim()}>
            Restore
          </button>
        </div>
      </form>
    </div>
  );
}
