import { useQuery } from '@tanstack/react-query';
import { Link, NavLink, Outlet } from 'react-router';
import { QueryState, StatusBadge } from '../../components/ui';
import { useTRPC } from '../../lib/trpc';
import { isDatabase, useServiceOverview } from './use-service';

/** A service's header and its screens, one route each (overview, variables, deployments, logs, metrics, terminal, volumes, database, push and previews, settings). */
export default function ServiceLayout() {
  const { serviceId, overview } = useServiceOverview();
  const trpc = useTRPC();
  const projectId = overview.data?.service.projectId;
  const project = useQuery({
    ...trpc.projects.bySlug.queryOptions({ projectSlug: projectId ?? '' }),
    enabled: !!projectId,
    staleTime: 60_000,
  });
  return (
    <QueryState query={overview} label="the service">
      {({ service }) => {
        const tabs: Array<[string, string]> = [
          ['', 'Overview'],
          ['variables', 'Variables'],
          ['deployments', 'Deployments'],
          ['logs', 'Logs'],
          ['metrics', 'Metrics'],
          ['terminal', 'Terminal'],
          ['volumes', 'Volumes'],
          ...(isDatabase(service) ? ([['database', 'Database']] as Array<[string, string]>) : []),
          ...(!isDatabase(service) && service.repoUrl !== 'storage' ? ([['push', 'Push and previews']] as Array<[string, string]>) : []),
          ['settings', 'Settings'],
        ];
        return (
          <>
            <div className="breadcrumbs">
              <Link to="/projects">Projects</Link> /{' '}
              {project.data ? <Link to={`/projects/${project.data.project.slug}`}>{project.data.project.name}</Link> : '...'} /{' '}
              {service.name}
            </div>
            <div className="spread">
              <h1>{service.name}</h1>
              <span aria-live="polite">
                <StatusBadge status={service.status} label="Service status" />
              </span>
            </div>
            <nav className="tabs-list" aria-label="Service">
              {tabs.map(([path, label]) => (
                <NavLink key={path} to={path ? `/services/${serviceId}/${path}` : `/services/${serviceId}`} end={path === ''}>
                  {label}
                </NavLink>
              ))}
            </nav>
            <Outlet />
          </>
        );
      }}
    </QueryState>
  );
}
