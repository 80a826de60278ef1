import { describe, expect, it } from 'vitest';
import { auditQueryOf, EMPTY_AUDIT_FILTER } from './audit-filter';

describe('the audit log’s filter', () => {
  it('sends nothing for an empty form', () => {
    expect(auditQueryOf(EMPTY_AUDIT_FILTER)).toEqual({});
  });

  it('trims the text fields and turns local date-times into ISO instants', () => {
    const from = '2026-11-28T09:30';
    expect(auditQueryOf({ ...EMPTY_AUDIT_FILTER, operation: ' services.update ', actor: 'usr_1', from })).toEqual({
      operation: 'services.update',
      actor: 'usr_1',
      from: new Date(from).toISOString(),
    });
  });

  it('passes a time it cannot read as typed, for the API to name', () => {
    expect(auditQueryOf({ ...EMPTY_AUDIT_FILTER, to: 'yesterday' })).toEqual({ to: 'yesterday' });
  });
});
