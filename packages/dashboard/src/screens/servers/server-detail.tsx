import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { useLivePoll } from '../../components/live-updates';
import { Confirm, Empty, ErrorNotice, QueryState, StatusBadge } from '../../components/ui';
import { fieldError } from '../../lib/api-error';
import { formatDate, timeAgo } from '../../lib/format';
import { formatLabels, parseLabels, userLabels } from '../../lib/labels';
import { useTRPC } from '../../lib/trpc';
import { round, type Server } from './server-list';

/** One server: its state, CPU and memory, the tasks on it; availability (drain), labels, removal. */
export default function ServerDetail() {
  const { serverId = '' } = useParams();
  const trpc = useTRPC();
  const every = useLivePoll(5_000);
  const server = useQuery({ ...trpc.servers.get.queryOptions({ id: serverId }), refetchInterval: every });
  return (
    <div className="stack">
      <div className="breadcrumbs">
        <Link to="/servers">Servers</Link> / {server.data?.server.name ?? serverId}
      </div>
      <QueryState query={server} label="the server">
        {({ server: s }) => <ServerView server={s} />}
      </QueryState>
    </div>
  );
}

function ServerView({ server: s }: { server: Server }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const availabilityId = useId();
  const refresh = () =>
    Promise.all([
      queryClient.invalidateQueries({ queryKey: trpc.servers.get.queryKey({ id: s.id }) }),
      queryClient.invalidateQueries({ queryKey: trpc.servers.list.queryKey() }),
    ]);
  const update = useMutation(trpc.servers.update.mutationOptions({ onSuccess: refresh }));
  const remove = useMutation(trpc.servers.delete.mutationOptions());
  const [availability, setAvailability] = useState(s.availability);
  const platformLabels = Object.entries(s.labels).filter(([k]) => k.startsWith('slipway.'));
  return (
    <>
      <div className="spread">
        <h1>{s.name}</h1>
        <span aria-live="polite">
          <StatusBadge status={s.state} label="Server state" />
        </span>
      </div>
      <section className="card" aria-labelledby="srv-h">
        <h2 id="srv-h">Server</h2>
        <dl className="kv">
          <dt>State</dt>
          <dd>
            <StatusBadge status={s.state} /> <span className="muted">since {timeAgo(s.stateChangedAt)}</span>
          </dd>
          <dt>Role</dt>
          <dd>
            {s.role}
            {s.local ? ' (the host running the platform)' : ''}
          </dd>
          <dt>Address</dt>
          <dd className="mono">{s.address ?? 'not joined yet'}</dd>
          <dt>Hostname</dt>
          <dd className="mono">{s.hostname ?? '-'}</dd>
          <dt>Engine</dt>
          <dd>{s.engineVersion ?? '-'}</dd>
          <dt>Joined</dt>
          <dd>{s.joinedAt ? formatDate(s.joinedAt) : 'not yet'}</dd>
        </dl>
      </section>

      <section className="card" aria-labelledby="res-h">
        <h2 id="res-h">CPU and memory</h2>
        {s.resources ? (
          <dl className="kv">
            <dt>CPU</dt>
            <dd>
              {round(s.resources.reservedCpus)} of {round(s.resources.cpus)} reserved
              <meter className="meter" min={0} max={s.resources.cpus || 1} value={s.resources.reservedCpus} aria-label="CPU reserved" />
            </dd>
            <dt>Memory</dt>
            <dd>
              {s.resources.reservedMemoryMb} of {s.resources.memoryMb} MB reserved
              <meter
                className="meter"
                min={0}
                max={s.resources.memoryMb || 1}
                value={s.resources.reservedMemoryMb}
                aria-label="Memory reserved"
              />
            </dd>
          </dl>
        ) : (
          <p className="muted">The manager cannot be asked right now.</p>
        )}
      </section>

      <section className="card" aria-labelledby="tasks-h">
        <h2 id="tasks-h">Tasks</h2>
        {s.tasks.length === 0 ? (
          <Empty>No task runs on this server.</Empty>
        ) : (
          <div className="table-wrap">
            <table>
              <caption className="visually-hidden">Tasks on {s.name}</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Service</th>
                  <th scope="col">State</th>
                  <th scope="col">Desired</th>
                </tr>
              </thead>
              <tbody>
                {s.tasks.map((t) => (
                  <tr key={t.id}>
                    <td className="mono">{t.name}</td>
                    <td>
                      {t.serviceId ? <Link to={`/services/${t.serviceId}`}>{t.serviceId}</Link> : <span className="muted">not ours</span>}
                    </td>
                    <td>{t.state}</td>
                    <td>{t.desiredState}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      <section className="card" aria-labelledby="avail-h">
        <h2 id="avail-h">Availability</h2>
        <p className="muted">Drain moves the server&apos;s tasks to the others; pause keeps them but places nothing new.</p>
        <form
          className="inline"
          onSubmit={(e) => {
            e.preventDefault();
            update.mutate({ id: s.id, availability });
          }}
        >
          <div className="field">
            <label htmlFor={availabilityId}>Availability</label>
            <select
              id={availabilityId}
              value={availability}
              onChange={(e) => setAvailability(e.target.value as typeof availability)}
              aria-invalid={fieldError(update.error, 'availability') ? true : undefined}
            >
              <option value="active">active</option>
              <option value="pause">pause</option>
              <option value="drain">drain</option>
            </select>
          </div>
          <button type="submit" disabled={update.isPending || availability === s.availability}>
            Set availability
          </button>
        </form>
        <ErrorNotice error={update.error && !fieldError(update.error, 'labels') ? update.error : null} />
      </section>

      <Labels server={s} onSave={(labels) => update.mutateAsync({ id: s.id, labels })} error={update.error} />
      {platformLabels.length > 0 ? (
        <p className="muted">
          The platform&apos;s own:{' '}
          {platformLabels.map(([k, v]) => (
            <code key={k}>
              {k}={v}{' '}
            </code>
          ))}
        </p>
      ) : null}

      <section className="card" aria-labelledby="rm-h">
        <h2 id="rm-h">Remove</h2>
        <p className="muted">A joined server must be drained and run no task first; the host running the platform stays.</p>
        <ErrorNotice error={remove.error} />
        <Confirm
          trigger={
            <button type="button" className="danger" disabled={s.local}>
              Remove server
            </button>
          }
          title={`Remove ${s.name}?`}
          description={<p>Its engine leaves the cluster; nothing is placed on it again.</p>}
          action="Remove server"
          typed={s.name}
          onConfirm={async () => {
            await remove.mutateAsync({ id: s.id });
            await queryClient.invalidateQueries({ queryKey: trpc.servers.list.queryKey() });
            navigate('/servers');
          }}
        />
      </section>
    </>
  );
}

function Labels({
  server,
  onSave,
  error,
}: {
  server: Server;
  onSave: (labels: Record<string, string>) => Promise<unknown>;
  error: unknown;
}) {
  const id = useId();
  const [text, setText] = useState(() => formatLabels(userLabels(server.labels)));
  const [local, setLocal] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const message = local ?? fieldError(error, 'labels');
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setSaved(false);
    const parsed = parseLabels(text);
    if (!parsed.ok) {
      setLocal(parsed.message);
      return;
    }
    setLocal(null);
    try {
      await onSave(parsed.labels);
      setSaved(true);
    } catch {
      // shown beside the field (or above) from the mutation's error
    }
  };
  return (
    <section className="card" aria-labelledby="labels-h">
      <h2 id="labels-h">Labels</h2>
      <form onSubmit={submit} noValidate>
        <div className="field">
          <label htmlFor={id}>Labels (one key=value a line)</label>
          <textarea
            id={id}
            rows={4}
            value={text}
            onChange={(e) => setText(e.target.value)}
            aria-invalid={message ? true : undefined}
            aria-describedby={message ? `${id}-error` : `${id}-hint`}
          />
          <span id={`${id}-hint`} className="hint">
            Placement constraints match them; keys starting with slipway. are the platform&apos;s.
          </span>
          {message ? (
            <span id={`${id}-error`} className="error">
              {message}
            </span>
          ) : null}
        </div>
        <button type="submit">Save labels</button>
        {saved ? (
          <span role="status" className="muted">
            {' '}
            Labels saved.
          </span>
        ) : null}
      </form>
    </section>
  );
}
