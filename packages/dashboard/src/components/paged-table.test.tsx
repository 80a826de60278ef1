import { fireEvent, render, screen } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import { PagedTable } from './paged-table';

const base = { label: 'Things', columns: ['Name', 'State'], empty: 'Nothing yet.', emptyPastFirst: 'No more things.' };

describe('PagedTable', () => {
  it('shows the empty state of the first page, and another past the last', () => {
    const { rerender } = render(<PagedTable {...base} count={0} page={1} onPrevious={() => {}} onNext={undefined} />);
    expect(screen.getByText('Nothing yet.')).toBeTruthy();
    expect(screen.queryByRole('table')).toBeNull();
    expect((screen.getByRole('button', { name: 'Previous page' }) as HTMLButtonElement).disabled).toBe(true);
    rerender(<PagedTable {...base} count={0} page={2} onPrevious={() => {}} onNext={undefined} />);
    expect(screen.getByText('No more things.')).toBeTruthy();
  });

  it('draws the rows under named column headers and pages on', () => {
    const onNext = vi.fn();
    render(
      <PagedTable {...base} count={1} page={1} onPrevious={() => {}} onNext={onNext}>
        <tr>
          <td>a</td>
          <td>ok</td>
        </tr>
      </PagedTable>,
    );
    expect(screen.getAllByRole('columnheader').map((h) => h.textContent)).toEqual(['Name', 'State']);
    expect(screen.getByRole('region', { name: 'Things table' })).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: 'Next page' }));
    expect(onNext).toHaveBeenCalledOnce();
  });
});
