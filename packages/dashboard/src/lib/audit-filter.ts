/**
 * The audit log's filter as typed in the form, and the query the API takes: blanks left out, the
 * browser's local date-times (`<input type="datetime-local">`) turned into ISO instants.
 */
export interface AuditFilterForm {
  projectId: string;
  actor: string;
  operation: string;
  from: string;
  to: string;
}

export const EMPTY_AUDIT_FILTER: AuditFilterForm = { projectId: '', actor: '', operation: '', from: '', to: '' };

export function auditQueryOf(form: AuditFilterForm): {
  projectId?: string;
  actor?: string;
  operation?: string;
  from?: string;
  to?: string;
} {
  const query: Record<string, string> = {};
  for (const key of ['projectId', 'actor', 'operation'] as const) {
    const value = form[key].trim();
    if (value) query[key] = value;
  }
  for (const key of ['from', 'to'] as const) {
    const value = form[key].trim();
    if (!value) continue;
    const time = new Date(value);
    // What does not read as a time goes as typed: the API's 400 names the field.
    query[key] = Number.isNaN(time.getTime()) ? value : time.toISOString();
  }
  return query;
}
