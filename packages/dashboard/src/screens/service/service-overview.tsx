import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Link } from 'react-router';
import { Confirm, Empty, ErrorNotice, Field, QueryState, StatusBadge } from '../../components/ui';
import { formError } from '../../lib/api-error';
import { formatBytes, timeAgo } from '../../lib/format';
import { useTRPC } from '../../lib/trpc';
import { DeployActions } from './deploy-actions';
import { type Overview, useServiceOverview } from './use-service';

export default function ServiceOverview() {
  const { overview } = useServiceOverview();
  return <QueryState query={overview}>{(data) => <OverviewView data={data} />}</QueryState>;
}

function OverviewView({ data }: { data: Overview }) {
  const { service } = data;
  const trpc = useTRPC();
  const metrics = useQuery({ ...trpc.metrics.get.queryOptions({ serviceId: service.id }), refetchInterval: 10_000 });
  const current = metrics.data?.current;
  return (
    <div className="stack">
      <section className="card" aria-labelledby="status-h">
        <h2 id="status-h">Status</h2>
        <dl className="kv">
          <dt>Status</dt>
          <dd>
            <StatusBadge status={service.status} />
          </dd>
          <dt>Reachable</dt>
          <dd>{service.reachable ? 'yes' : 'no'}</dd>
          <dt>URL</dt>
          <dd>{service.primaryUrl ? <a href={service.primaryUrl}>{service.primaryUrl}</a> : <span className="muted">none yet</span>}</dd>
          <dt>Local address</dt>
          <dd className="mono">{service.localUrl || '-'}</dd>
          <dt>Source</dt>
          <dd className="mono">{service.containerImage ?? service.repoFullName ?? service.repoUrl ?? '-'}</dd>
          <dt>Runtime</dt>
          <dd>
            {service.runtimeMode}, port {service.internalPort} (host {service.hostPort})
          </dd>
          <dt>Last deployed</dt>
          <dd>{timeAgo(service.lastDeployedAt)}</dd>
        </dl>
        <h3>Deploy</h3>
        <DeployActions overview={data} />
      </section>

      <FailingChannels notifications={data.notifications} />

      <section className="card" aria-labelledby="res-h">
        <h2 id="res-h">Resources</h2>
        {metrics.error ? <ErrorNotice error={metrics.error} title="Could not load metrics" /> : null}
        {current ? (
          <dl className="kv">
            <dt>CPU</dt>
            <dd>{current.cpuPercent.toFixed(1)} %</dd>
            <dt>Memory</dt>
            <dd>
              {formatBytes(current.memoryUsedBytes)} of {formatBytes(current.memoryLimitBytes)}
            </dd>
            <dt>Network</dt>
            <dd>
              {formatBytes(current.netRxBytes)} in, {formatBytes(current.netTxBytes)} out
            </dd>
            <dt>Restarts</dt>
            <dd>{current.restarts}</dd>
          </dl>
        ) : metrics.isPending ? (
          <p className="muted">Loading...</p>
        ) : (
          <p className="muted">No container is running.</p>
        )}
        <Link to="metrics">Metrics over time</Link>
      </section>

      <Domains data={data} />

      <section className="card" aria-labelledby="dep-h">
        <h2 id="dep-h">Recent deployments</h2>
        {data.deployments.length === 0 ? (
          <Empty>Not deployed yet.</Empty>
        ) : (
          <ul className="list">
            {data.deployments.slice(0, 5).map((d) => (
              <li key={d.id}>
                <span>
                  <Link to={`deployments/${d.id}`}>{d.trigger} deployment</Link> <span className="muted">{timeAgo(d.createdAt)}</span>
                  {d.id === data.liveDeploymentId ? <span className="badge ok"> live</span> : null}
                </span>
                <StatusBadge status={d.status} label="Deployment status" />
              </li>
            ))}
          </ul>
        )}
      </section>
    </div>
  );
}

function Domains({ data }: { data: Overview }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const serviceId = data.service.id;
  const [hostname, setHostname] = useState('');
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.services.overview.queryKey({ serviceId }) });
  const add = useMutation(
    trpc.domains.create.mutationOptions({
      onSuccess: () => {
        setHostname('');
        return refresh();
      },
    }),
  );
  const remove = useMutation(trpc.domains.delete.mutationOptions({ onSuccess: refresh }));
  const proxy = add.data?.proxy ?? remove.data?.proxy;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    add.mutate({ serviceId, hostname: hostname.trim() });
  };
  return (
    <section className="card" aria-labelledby="dom-h">
      <h2 id="dom-h">Domains</h2>
      {data.domains.length === 0 ? (
        <p className="muted">No custom domain.</p>
      ) : (
        <ul className="list">
          {data.domains.map((d) => (
            <li key={d.id}>
              <span>
                <a href={`http://${d.hostname}`}>{d.hostname}</a> <StatusBadge status={d.status} />
              </span>
              <Confirm
                trigger={<button type="button">Remove domain</button>}
                title={`Remove ${d.hostname}?`}
                description={<p>The proxy stops routing it to this service.</p>}
                action="Remove domain"
                onConfirm={() => remove.mutateAsync({ serviceId, domainId: d.id })}
              />
            </li>
          ))}
        </ul>
      )}
      <form className="inline" onSubmit={submit} noValidate>
        <Field label="Hostname" name="hostname" value={hostname} onChange={setHostname} error={add.error} placeholder="app.example.com" />
        <button type="submit" disabled={add.isPending}>
          Add domain
        </button>
      </form>
      <ErrorNotice error={formError(add.error, ['hostname']) && add.error} />
      {proxy ? (
        <p className={`alert ${proxy.ok ? 'ok' : ''}`} role="status">
          Proxy: {proxy.ok ? 'reloaded' : 'not reloaded'}. {proxy.detail}
        </p>
      ) : null}
      {data.publicIp ? (
        <p className="muted">
          Point the domain's DNS A record at <code>{data.publicIp}</code>.
        </p>
      ) : null}
    </section>
  );
}

/** The project's notification channels whose last 5 deliveries failed: an alert nobody receives is worth a look. */
function FailingChannels({ notifications }: { notifications: Overview['notifications'] }) {
  if (notifications.failing.length === 0) return null;
  return (
    <section className="card" aria-labelledby="notif-h">
      <h2 id="notif-h">Notifications failing</h2>
      <p className="alert" role="status">
        {notifications.failing.length} of {notifications.channels} notification {notifications.channels === 1 ? 'channel' : 'channels'} of
        this project failed their last 5 deliveries.
      </p>
      <ul>
        {notifications.failing.map((c) => (
          <li key={c.id}>
            <Link to="/notifications">{c.name}</Link> ({c.type}){c.lastError ? <span className="mono">: {c.lastError}</span> : null}
          </li>
        ))}
      </ul>
    </section>
  );
}
