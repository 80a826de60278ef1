import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { useLivePoll } from '../../components/live-updates';
import { Empty, QueryState, StatusBadge } from '../../components/ui';
import { formatDate, timeAgo } from '../../lib/format';
import { useTRPC } from '../../lib/trpc';
import { DeployActions } from './deploy-actions';
import { useServiceOverview } from './use-service';

export default function Deployments() {
  const { serviceId, overview } = useServiceOverview();
  const trpc = useTRPC();
  const every = useLivePoll(3_000);
  const list = useQuery({ ...trpc.deployments.list.queryOptions({ serviceId }), refetchInterval: every });
  const live = overview.data?.liveDeploymentId;
  return (
    <div className="stack">
      {overview.data ? <DeployActions overview={overview.data} /> : null}
      <QueryState query={list} label="deployments">
        {({ deployments }) =>
          deployments.length === 0 ? (
            <Empty>No deployments yet. Deploy to build and start the service.</Empty>
          ) : (
            <div className="table-wrap">
              <table>
                <caption className="visually-hidden">Deployments, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Deployment</th>
                    <th scope="col">Status</th>
                    <th scope="col">Commit</th>
                    <th scope="col">Started</th>
                    <th scope="col">Finished</th>
                  </tr>
                </thead>
                <tbody>
                  {deployments.map((d) => (
                    <tr key={d.id}>
                      <td>
                        <Link to={d.id}>
                          {d.trigger} <span className="mono">{d.id.slice(0, 8)}</span>
                        </Link>
                        {d.id === live ? <span className="badge ok"> live</span> : null}
                      </td>
                      <td>
                        <StatusBadge status={d.status} />
                      </td>
                      <td className="mono">{d.commitSha?.slice(0, 10) ?? '-'}</td>
                      <td title={formatDate(d.startedAt)}>{d.startedAt ? timeAgo(d.startedAt) : '-'}</td>
                      <td title={formatDate(d.finishedAt)}>{d.finishedAt ? timeAgo(d.finishedAt) : '-'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </QueryState>
    </div>
  );
}
