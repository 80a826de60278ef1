import { fireEvent, render, screen } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import { BackupTable, type BackupRow } from './backup-table';

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
