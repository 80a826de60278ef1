import { fireEvent, render, screen } from '@testing-library/react';
import { useState } from 'react';
import { describe, expect, it } from 'vitest';
import { ReferenceInput } from './reference-input';

function Harness() {
  const [value, setValue] = useState('');
  return (
    <>
      <label htmlFor="v">Value</label>
      <ReferenceInput
        id="v"
        value={value}
        onChange={setValue}
        suggestions={[
          { key: 'db.DATABASE_URL', label: 'db' },
          { key: 'web.PORT', label: 'web' },
        ]}
      />
    </>
  );
}

describe('ReferenceInput', () => {
  it('offers references after ${ and completes one from the keyboard', () => {
    render(<Harness />);
    const input = screen.getByRole('combobox', { name: 'Value' }) as HTMLInputElement;
    expect(input.getAttribute('aria-expanded')).toBe('false');
    fireEvent.change(input, { target: { value: 'x=${', selectionStart: 4 } });
    expect(input.getAttribute('aria-expanded')).toBe('true');
    expect(screen.getAllByRole('option').map((o) => o.textContent)).toEqual(['${db.DATABASE_URL} db', '${web.PORT} web']);
    fireEvent.keyDown(input, { key: 'ArrowDown' });
    expect(screen.getAllByRole('option')[1]!.getAttribute('aria-selected')).toBe('true');
    fireEvent.keyDown(input, { key: 'Enter' });
    expect(input.value).toBe('x=${web.PORT}');
    expect(input.getAttribute('aria-expanded')).toBe('false');
  });

  it('narrows as the key is typed and closes on Escape', () => {
    render(<Harness />);
    const input = screen.getByRole('combobox', { name: 'Value' });
    fireEvent.change(input, { target: { value: '${we', selectionStart: 4 } });
    expect(screen.getAllByRole('option')).toHaveLength(1);
    fireEvent.keyDown(input, { key: 'Escape' });
    expect(input.getAttribute('aria-expanded')).toBe('false');
  });
});
