import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import { BackupList, BackupTable, type BackupRow } from './backup-table';
import { type BackupListData, useBackupActions } from './use-backup-actions';

const succeeded = {
  id: 'b1',
  status: 'succeeded',
  trigger: 'manual',
  storage: 'disk',
  sizeBytes: 2048,
  error: null,
  createdAt: '2026-11-28T10:00:00.000Z',
  drill: null,
} as unknown as BackupRow;
const running = { ...succeeded, id: 'b2', status: 'running' } as BackupRow;

function table(overrides: Partial<Parameters<typeof BackupTable>[0]> = {}) {
  const props = {
    backups: [succeeded, running],
    caption: 'Backups of volume files, newest first',
    restoreWarning: (when: string) => `The volume's files are replaced by the backup of ${when}.`,
    downloadHref: (b: BackupRow) => `/download/${b.id}`,
    drillPending: false,
    onDrill: vi.fn(),
    onRestore: vi.fn(async () => {}),
    onDelete: vi.fn(async () => {}),
    ...overrides,
  };
  render(<BackupTable {...props} />);
  return props;
}

describe('BackupTable', () => {
  it('offers drill, restore, download and delete on a succeeded backup only, under the caption it is given', () => {
    const props = table();
    expect(screen.getByRole('table', { name: 'Backups of volume files, newest first' })).toBeTruthy();
    expect(screen.getAllByRole('button', { name: /^Drill backup of/ })).toHaveLength(1);
    expect(screen.getAllByRole('link', { name: /^Download backup of/ })[0]!.getAttribute('href')).toBe('/download/b1');
    expect(screen.getAllByText('never')).toHaveLength(2);
    fireEvent.click(screen.getByRole('button', { name: /^Drill backup of/ }));
    expect(props.onDrill).toHaveBeenCalledWith(succeeded);
  });

  it('keeps Drill disabled while a drill is being asked for or runs', () => {
    table({ backups: [{ ...succeeded, drill: { status: 'running', requestedAt: succeeded.createdAt } } as unknown as BackupRow] });
    expect((screen.getByRole('button', { name: /^Drill backup of/ }) as HTMLButtonElement).disabled).toBe(true);
  });
});

/** A backups screen as the database's and the volume's are: the shared actions on fake calls, the shared list. */
function Screen(props: {
  calls: Parameters<typeof useBackupActions<{ storage: string }, { name: string; backupId: string }>>[0];
  data: BackupListData;
}) {
  const actions = useBackupActions(props.calls);
  const list = { isPending: false, error: null, data: props.data, refetch: () => {} };
  return (
    <>
      <button type="button" onClick={() => actions.create.mutate({ storage: 'disk' })}>
        Back up
      </button>
      <BackupList
        list={list}
        actions={actions}
        label="backups of volume files"
        empty="No backups of this volume yet."
        caption="Backups of volume files, newest first"
        restoreWarning={(when) => `Replaced by the backup of ${when}.`}
        downloadHref={(b) => `/download/${b.id}`}
      />
    </>
  );
}

function screenWith(overrides: Partial<Parameters<typeof Screen>[0]['calls']> = {}, data?: BackupListData) {
  const client = new QueryClient({ defaultOptions: { mutations: { retry: false } } });
  const invalidate = vi.spyOn(client, 'invalidateQueries');
  const calls = {
    listKey: ['volumes', 'files'],
    target: (backupId: string) => ({ name: 'files', backupId }),
    create: vi.fn(async () => ({})),
    restore: vi.fn(async () => ({ restoredAt: '2026-11-28T11:00:00.000Z' })),
    drill: vi.fn(async () => ({})),
    remove: vi.fn(async () => ({})),
    ...overrides,
  };
  render(
    <QueryClientProvider client={client}>
      <Screen calls={calls} data={data ?? { backups: [succeeded], drills: { neverDrilled: 1, failed: 0 } }} />
    </QueryClientProvider>,
  );
  return { calls, invalidate };
}

describe('useBackupActions with BackupList', () => {
  it("calls each procedure with the backup's target and reads the list again after it", async () => {
    const { calls, invalidate } = screenWith();
    expect(screen.getByRole('status').textContent).toBe('Restore drills: 0 failed, 1 never drilled.');
    fireEvent.click(screen.getByRole('button', { name: 'Back up' }));
    await waitFor(() => expect(calls.create).toHaveBeenCalledWith({ storage: 'disk' }));
    fireEvent.click(screen.getByRole('button', { name: /^Drill backup of/ }));
    await waitFor(() => expect(calls.drill).toHaveBeenCalledWith({ name: 'files', backupId: 'b1' }));
    fireEvent.click(screen.getByRole('button', { name: /^Delete backup of/ }));
    fireEvent.click(await screen.findByRole('button', { name: 'Delete backup' }));
    await waitFor(() => expect(calls.remove).toHaveBeenCalledWith({ name: 'files', backupId: 'b1' }));
    await waitFor(() => expect(invalidate).toHaveBeenCalledTimes(3));
    expect(invalidate).toHaveBeenCalledWith({ queryKey: ['volumes', 'files'] });
  });

  it('says when a restore was done, after its confirmation', async () => {
    const { calls } = screenWith();
    fireEvent.click(screen.getByRole('button', { name: /^Restore backup of/ }));
    expect(calls.restore).not.toHaveBeenCalled();
    fireEvent.click(await screen.findByRole('button', { name: 'Restore' }));
    await waitFor(() => expect(calls.restore).toHaveBeenCalledWith({ name: 'files', backupId: 'b1' }));
    expect((await screen.findByText(/^Restored at/)).getAttribute('role')).toBe('status');
  });

  it("shows a failed write's API error, and the empty state of a list without backups", async () => {
    const failure = Object.assign(new Error('the object store is not connected'), {
      data: { error: 'precondition_failed', message: 'the object store is not connected', details: {} },
    });
    screenWith({ create: vi.fn(async () => Promise.reject(failure)) }, { backups: [], drills: { neverDrilled: 0, failed: 0 } });
    expect(screen.getByText('No backups of this volume yet.')).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: 'Back up' }));
    expect((await screen.findByRole('alert')).textContent).toMatch(/the object store is not connected/);
  });
});
