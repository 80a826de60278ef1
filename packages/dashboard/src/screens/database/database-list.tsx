import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { Empty, PageTitle, QueryState, StatusBadge } from '../../components/ui';
import { timeAgo } from '../../lib/format';
import { useTRPC } from '../../lib/trpc';

/** Every database service the account can see, across projects. */
export default function DatabaseList() {
  const trpc = useTRPC();
  const list = useQuery({ ...trpc.databaseServices.list.queryOptions(), refetchInterval: 10_000 });
  const projects = useQuery(trpc.projects.list.queryOptions());
  const projectName = new Map((projects.data?.projects ?? []).map((p) => [p.id, p.name]));
  return (
    <>
      <PageTitle>Databases</PageTitle>
      <QueryState query={list} label="databases">
        {({ databases }) =>
          databases.length === 0 ? (
            <Empty>No databases yet. Create one from a project: Create service, then Database.</Empty>
          ) : (
            <div className="table-wrap">
              <table>
                <caption className="visually-hidden">Databases</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Engine</th>
                    <th scope="col">Project</th>
                    <th scope="col">Status</th>
                    <th scope="col">Created</th>
                  </tr>
                </thead>
                <tbody>
                  {databases.map((d) => (
                    <tr key={d.id}>
                      <td>
                        <Link to={`/services/${d.id}/database`}>{d.name}</Link>
                      </td>
                      <td>{d.repoFullName?.replace('database:', '')}</td>
                      <td>{projectName.get(d.projectId) ?? d.projectId}</td>
                      <td>
                        <StatusBadge status={d.status} />
                      </td>
                      <td>{timeAgo(d.createdAt)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </QueryState>
    </>
  );
}
