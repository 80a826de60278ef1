import { type QueryKey, useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { BackupRow } from './backup-table';

/** The part of a backups list the shared view reads: a database's (`backups.list`) or a volume's (`volumes.backups`). */
export interface BackupListData {
  backups: BackupRow[];
  drills: { neverDrilled: number; failed: number };
}

/** A list is read every 2 s while a backup or a drill runs (its state changes on screen), else every 15 s. */
export function backupsRefetchInterval(query: { state: { data?: BackupListData | undefined } }): number {
  return query.state.data?.backups.some((b) => b.status === 'running' || b.drill?.status === 'queued' || b.drill?.status === 'running')
    ? 2_000
    : 15_000;
}

/** What the shared backups view (BackupList) reads of a screen's actions. */
export interface BackupActions {
  /** When the last restore from this screen was done. */
  restoredAt: string | null;
  /** The last write that failed: a restore's and a delete's are also shown in their confirmation. */
  error: unknown;
  drillPending: boolean;
  onDrill: (backup: BackupRow) => void;
  onRestore: (backup: BackupRow) => Promise<unknown>;
  onDelete: (backup: BackupRow) => Promise<unknown>;
}

/**
 * The four writes of a backups screen (back up, restore, drill, delete), each reading the list again once it
 * succeeded; a restore also says when it was done. The procedures differ (a database's backups, a volume's),
 * the screen's behaviour does not: the screen passes its client's calls (each called with its input alone, not
 * with the mutation's context as a second argument), and `target` makes their input from a backup's id.
 */
export function useBackupActions<TCreate, TTarget>(ops: {
  listKey: QueryKey;
  target: (backupId: string) => TTarget;
  create: (input: TCreate) => Promise<unknown>;
  restore: (target: TTarget) => Promise<{ restoredAt: string }>;
  drill: (target: TTarget) => Promise<unknown>;
  remove: (target: TTarget) => Promise<unknown>;
}) {
  const queryClient = useQueryClient();
  const [restoredAt, setRestoredAt] = useState<string | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: ops.listKey });
  const create = useMutation({ mutationFn: (input: TCreate) => ops.create(input), onSuccess: refresh });
  const restore = useMutation({
    mutationFn: (target: TTarget) => ops.restore(target),
    onSuccess: (r) => {
      setRestoredAt(r.restoredAt);
      return refresh();
    },
  });
  const drill = useMutation({ mutationFn: (target: TTarget) => ops.drill(target), onSuccess: refresh });
  const remove = useMutation({ mutationFn: (target: TTarget) => ops.remove(target), onSuccess: refresh });
  const actions: BackupActions = {
    restoredAt,
    error: create.error ?? remove.error ?? drill.error ?? restore.error,
    drillPending: drill.isPending,
    onDrill: (b) => drill.mutate(ops.target(b.id)),
    onRestore: (b) => restore.mutateAsync(ops.target(b.id)),
    onDelete: (b) => remove.mutateAsync(ops.target(b.id)),
  };
  return { ...actions, refresh, create };
}
