import { fireEvent, render, screen } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import { RegistryForm } from './registry-form';

const platform = { kind: 'platform' as const, address: '10.0.0.1:5000', username: null, running: true };

describe('RegistryForm', () => {
  it('sends the platform registry as its kind alone, an external one with its trimmed address and credentials', () => {
    const onSave = vi.fn();
    render(<RegistryForm registry={platform} error={null} pending={false} saved={false} onSave={onSave} />);
    expect(screen.queryByLabelText('Registry password')).toBeNull();
    fireEvent.click(screen.getByRole('button', { name: 'Save registry' }));
    expect(onSave).toHaveBeenLastCalledWith({ kind: 'platform' });
    fireEvent.click(screen.getByLabelText('An external registry'));
    fireEvent.change(screen.getByLabelText('Registry address'), { target: { value: ' registry.example.com:5000 ' } });
    fireEvent.change(screen.getByLabelText('Registry username'), { target: { value: 'ci' } });
    fireEvent.change(screen.getByLabelText('Registry password'), { target: { value: 's3cret' } });
    fireEvent.click(screen.getByRole('button', { name: 'Save registry' }));
    expect(onSave).toHaveBeenLastCalledWith({ kind: 'external', address: 'registry.example.com:5000', username: 'ci', password: 's3cret' });
  });

  it("shows the API's refusal beside the field it names, and empties the write-only password once saved", () => {
    const external = { kind: 'external' as const, address: 'registry.example.com', username: 'ci', running: false };
    const error = { data: { error: 'validation_error', message: 'required for an external registry', details: { field: 'password' } } };
    const { rerender } = render(<RegistryForm registry={external} error={error} pending={false} saved={false} onSave={() => {}} />);
    const password = screen.getByLabelText('Registry password') as HTMLInputElement;
    expect(password.getAttribute('aria-invalid')).toBe('true');
    const texts = (password.getAttribute('aria-describedby') ?? '').split(' ').map((id) => document.getElementById(id)?.textContent);
    expect(texts).toContain('required for an external registry');
    expect(screen.queryByRole('alert')).toBeNull();
    fireEvent.change(password, { target: { value: 'typed' } });
    rerender(<RegistryForm registry={external} error={null} pending={false} saved={true} onSave={() => {}} />);
    expect((screen.getByLabelText('Registry password') as HTMLInputElement).value).toBe('');
  });
});
