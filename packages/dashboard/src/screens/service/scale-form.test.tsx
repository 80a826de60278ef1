import { fireEvent, render, screen } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import { ScaleForm } from './scale-form';

const initial = { replicas: 1, resources: { cpuLimit: 0.5, memoryLimitMb: null, cpuReservation: null, memoryReservationMb: 64 } };

describe('ScaleForm', () => {
  it('shows the service scale, sends empty fields as null and numbers as numbers', () => {
    const onSave = vi.fn();
    render(<ScaleForm initial={initial} error={null} pending={false} saved={false} onSave={onSave} />);
    expect((screen.getByLabelText('CPU limit (CPUs)') as HTMLInputElement).value).toBe('0.5');
    expect((screen.getByLabelText('Memory limit (MB)') as HTMLInputElement).value).toBe('');
    fireEvent.change(screen.getByLabelText('Memory limit (MB)'), { target: { value: ' 256 ' } });
    fireEvent.change(screen.getByLabelText('CPU limit (CPUs)'), { target: { value: '' } });
    fireEvent.change(screen.getByLabelText('Replicas'), { target: { value: '2' } });
    fireEvent.click(screen.getByRole('button', { name: 'Save scale' }));
    expect(onSave).toHaveBeenCalledWith({
      replicas: 2,
      resources: { cpuLimit: null, memoryLimitMb: 256, cpuReservation: null, memoryReservationMb: 64 },
    });
  });

  it("shows the API's error beside the field it names, not as a form error", () => {
    const error = {
      data: { error: 'validation_error', message: 'memoryLimitMb must be at least 6', details: { field: 'resources.memoryLimitMb' } },
    };
    render(<ScaleForm initial={initial} error={error} pending={false} saved={false} onSave={() => {}} />);
    const field = screen.getByLabelText('Memory limit (MB)');
    expect(field.getAttribute('aria-invalid')).toBe('true');
    const describedBy = field.getAttribute('aria-describedby') ?? '';
    const texts = describedBy.split(' ').map((id) => document.getElementById(id)?.textContent);
    expect(texts).toContain('memoryLimitMb must be at least 6');
    expect(screen.getByLabelText('Replicas').getAttribute('aria-invalid')).toBeNull();
    expect(screen.queryByRole('alert')).toBeNull();
  });
});
