import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { useState } from 'react';
import { describe, expect, it } from 'vitest';
import { Modal } from './ui';

function Opener() {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button type="button" onClick={() => setOpen(true)}>
        Create project
      </button>
      <Modal open={open} onOpenChange={setOpen} title="Create project">
        {/* biome-ignore lint/a11y/noAutofocus: as the dashboard's dialogs do: a field that takes focus before Radix's handler runs */}
        <input aria-label="Name" autoFocus />
      </Modal>
    </>
  );
}

describe('Modal', () => {
  it('gives focus back to what opened it when it closes (it has no Radix trigger to return to)', async () => {
    render(<Opener />);
    const opener = screen.getByRole('button', { name: 'Create project' });
    opener.focus();
    fireEvent.click(opener);
    const dialog = await screen.findByRole('dialog');
    await waitFor(() => expect(dialog.contains(document.activeElement)).toBe(true));
    fireEvent.keyDown(document.activeElement!, { key: 'Escape' });
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
    expect(document.activeElement).toBe(opener);
  });
});
