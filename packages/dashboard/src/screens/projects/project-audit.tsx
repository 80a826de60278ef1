import { useQuery } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import { QueryState } from '../../components/ui';
import { useTRPC } from '../../lib/trpc';
import { AuditLogView } from '../audit/audit-log';

/** A project's own audit log, for the project's writers (the install's log is for owners and admins). */
export default function ProjectAudit() {
  const { projectSlug = '' } = useParams();
  const trpc = useTRPC();
  const project = useQuery(trpc.projects.bySlug.queryOptions({ projectSlug }));
  return (
    <QueryState query={project} label="the project">
      {({ project: p }) => (
        <>
          <div className="breadcrumbs">
            <Link to="/projects">Projects</Link> / <Link to={`/projects/${p.slug}`}>{p.name}</Link> / Audit log
          </div>
          <AuditLogView project={p} />
        </>
      )}
    </QueryState>
  );
}
