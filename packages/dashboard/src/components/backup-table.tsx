import type { ReactNode } from 'react';
import { formatBytes, formatDate } from '../lib/format';
import type { RouterOutputs } from '../lib/trpc';
import { Confirm, Empty, ErrorNotice, QueryState, StatusBadge } from './ui';
import type { BackupActions, BackupListData } from './use-backup-actions';

/** A backup as the API lists it: a database's or a named volume's (the same shape). */
export type BackupRow = RouterOutputs['backups']['list']['backups'][number];

/**
 * Backups, newest first: each with its status, storage, size and last restore drill, and, once it
 * succeeded, Drill, Restore (after a confirmation), Download and Delete. The database backups and the
 * volume backups screens differ only in what restoring replaces and where the file is downloaded from.
 */
export function BackupTable(props: {
  backups: BackupRow[];
  caption: string;
  /** What a restore of the backup made `when` replaces, said in its confirmation. */
  restoreWarning: (when: string) => ReactNode;
  downloadHref: (backup: BackupRow) => string;
  drillPending: boolean;
  onDrill: (backup: BackupRow) => void;
  onRestore: (backup: BackupRow) => Promise<unknown>;
  onDelete: (backup: BackupRow) => Promise<unknown>;
}) {
  return (
    <div className="table-wrap">
      <table>
        <caption className="visually-hidden">{props.caption}</caption>
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
          {props.backups.map((b) => {
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
                      {b.drill.reason ? <div className={b.drill.status === 'failed' ? 'error-text' : 'muted'}>{b.drill.reason}</div> : null}
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
                        onClick={() => props.onDrill(b)}
                        disabled={props.drillPending || b.drill?.status === 'queued' || b.drill?.status === 'running'}
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
                        description={<p>{props.restoreWarning(when)}</p>}
                        action="Restore"
                        onConfirm={() => props.onRestore(b)}
                      />
                      <a className="button" href={props.downloadHref(b)} download aria-label={`Download backup of ${when}`}>
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
                        onConfirm={() => props.onDelete(b)}
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
  );
}

/**
 * A backups screen below its Back up controls: the last failed write, when a restore was done, the list's
 * loading, error and empty states, the counts of backups never drilled or failing their drill, and the table
 * wired to the screen's actions (useBackupActions).
 */
export function BackupList<T extends BackupListData>(props: {
  list: { isPending: boolean; error: unknown; data: T | undefined; refetch: () => unknown };
  actions: BackupActions;
  /** Named in the list's loading and error states ("backups", "backups of volume data"). */
  label: string;
  empty: ReactNode;
  /** What the list says above its counts (a database's: no object store answers). */
  notice?: (data: T) => ReactNode;
  caption: string;
  restoreWarning: (when: string) => ReactNode;
  downloadHref: (backup: BackupRow) => string;
}) {
  const { actions } = props;
  return (
    <>
      <ErrorNotice error={actions.error} />
      {actions.restoredAt ? (
        <p className="alert ok" role="status">
          Restored at {formatDate(actions.restoredAt)}.
        </p>
      ) : null}
      <QueryState query={props.list} label={props.label}>
        {(data) => (
          <>
            {props.notice?.(data)}
            {data.drills.neverDrilled > 0 || data.drills.failed > 0 ? (
              <p className={data.drills.failed > 0 ? 'alert' : 'muted'} role="status">
                Restore drills: {data.drills.failed} failed, {data.drills.neverDrilled} never drilled.
              </p>
            ) : null}
            {data.backups.length === 0 ? (
              <Empty>{props.empty}</Empty>
            ) : (
              <BackupTable
                backups={data.backups}
                caption={props.caption}
                restoreWarning={props.restoreWarning}
                downloadHref={props.downloadHref}
                drillPending={actions.drillPending}
                onDrill={actions.onDrill}
                onRestore={actions.onRestore}
                onDelete={actions.onDelete}
              />
            )}
          </>
        )}
      </QueryState>
    </>
  );
}
