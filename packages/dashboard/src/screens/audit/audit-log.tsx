import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { PagedTable } from '../../components/paged-table';
import { ProjectSelect } from '../../components/project-select';
import { Field, PageTitle, QueryState, StatusBadge } from '../../components/ui';
import { type AuditFilterForm, auditQueryOf, EMPTY_AUDIT_FILTER } from '../../lib/audit-filter';
import { useCursorPages } from '../../lib/cursor-pages';
import { formatDate } from '../../lib/format';
import { useTRPC } from '../../lib/trpc';

const PAGE = 50;

/** The install's audit log, newest first: every write, by whom, through which door, with what outcome; filtered and paged. */
export default function AuditLog() {
  return <AuditLogView />;
}

/** The audit log, the install's or (for its writers) one project's (`audit.project`, GET /api/projects/:id/audit). */
export function AuditLogView({ project }: { project?: { id: string; name: string } }) {
  const trpc = useTRPC();
  const projects = useQuery({ ...trpc.projects.list.queryOptions(), enabled: !project });
  const [form, setForm] = useState<AuditFilterForm>(EMPTY_AUDIT_FILTER);
  const [applied, setApplied] = useState<AuditFilterForm>(EMPTY_AUDIT_FILTER);
  const pages = useCursorPages();
  const query = { ...auditQueryOf(applied), limit: PAGE, ...(pages.cursor ? { cursor: pages.cursor } : {}) };
  const { projectId: _all, ...projectQuery } = query;
  const list = useQuery({
    ...(project ? trpc.audit.project.queryOptions({ ...projectQuery, projectId: project.id }) : trpc.audit.list.queryOptions(query)),
    placeholderData: keepPreviousData,
  });
  const projectName = new Map(project ? [[project.id, project.name]] : (projects.data?.projects ?? []).map((p) => [p.id, p.name]));
  const set = (key: keyof AuditFilterForm) => (value: string) => setForm((f) => ({ ...f, [key]: value }));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setApplied(form);
    pages.reset();
  };
  return (
    <div className="stack">
      <PageTitle>{project ? `Audit log of ${project.name}` : 'Audit log'}</PageTitle>
      <form className="card" onSubmit={submit} noValidate aria-label="Filter the audit log">
        <div className="grid-2">
          {project ? null : (
            <ProjectSelect projects={projects} value={form.projectId} onChange={set('projectId')} anyLabel="All projects" />
          )}
          <Field
            label="Actor"
            name="actor"
            value={form.actor}
            onChange={set('actor')}
            error={list.error}
            hint="A user's, key's or token's id, or a job's name"
          />
          <Field
            label="Operation"
            name="operation"
            value={form.operation}
            onChange={set('operation')}
            error={list.error}
            placeholder="services.update"
          />
          <Field label="From" name="from" type="datetime-local" value={form.from} onChange={set('from')} error={list.error} />
          <Field label="To" name="to" type="datetime-local" value={form.to} onChange={set('to')} error={list.error} />
        </div>
        <div className="row">
          <button type="submit" className="primary">
            Filter
          </button>
          <button
            type="button"
            onClick={() => {
              setForm(EMPTY_AUDIT_FILTER);
              setApplied(EMPTY_AUDIT_FILTER);
              pages.reset();
            }}
          >
            Clear filter
          </button>
        </div>
      </form>
      <QueryState query={list} label="the audit log">
        {({ entries, nextCursor }) => (
          <>
            <PagedTable
              label="Audit log"
              columns={['Time', 'Actor', 'Operation', 'Door', 'Project', 'Targets', 'Address', 'Outcome']}
              count={entries.length}
              empty="No entry matches."
              emptyPastFirst="No older entries."
              page={pages.page}
              onPrevious={pages.previous}
              onNext={nextCursor ? () => pages.next(nextCursor) : undefined}
            >
              {entries.map((e) => (
                <tr key={e.id}>
                  <td>{formatDate(e.at)}</td>
                  <td>
                    {e.actor.kind} <span className="mono">{e.actor.id ?? ''}</span>
                  </td>
                  <td className="mono">{e.operation}</td>
                  <td>{e.door}</td>
                  <td>{e.projectId ? (projectName.get(e.projectId) ?? e.projectId) : '-'}</td>
                  <td className="mono">{e.targetIds.join(', ') || '-'}</td>
                  <td className="mono">{e.clientAddress ?? '-'}</td>
                  <td>
                    <StatusBadge status={e.outcome === 'success' ? 'success' : 'failed'} label="Outcome" />
                    {e.outcome === 'success' ? null : <span className="mono"> {e.outcome}</span>}
                  </td>
                </tr>
              ))}
            </PagedTable>
          </>
        )}
      </QueryState>
    </div>
  );
}
