import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';
import { Link } from 'react-router';
import { useLivePoll } from '../../components/live-updates';
import { SecretOnce } from '../../components/secret-once';
import { CopyButton, Empty, ErrorNotice, Field, QueryState, StatusBadge } from '../../components/ui';
import { apiErrorOf, fieldError, formError } from '../../lib/api-error';
import { formatDate } from '../../lib/format';
import { useTRPC } from '../../lib/trpc';
import { type Overview, useServiceOverview } from './use-service';

type Service = Overview['service'];

/** Push to deploy on a service (its git hook settings and pull-request previews), the project's webhook and its deliveries. */
export default function PushPreviews() {
  const { overview } = useServiceOverview();
  return (
    <QueryState query={overview}>
      {({ service }) => (
        <div className="stack">
          <TriggerSettings service={service} />
          <PreviewSettings service={service} />
          <Previews service={service} />
          <ProjectWebhook projectId={service.projectId} />
        </div>
      )}
    </QueryState>
  );
}

function useUpdate(serviceId: string) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return useMutation(
    trpc.services.update.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.services.overview.queryKey({ serviceId }) }),
    }),
  );
}

const TRIGGER_FIELDS = ['autoDeploy', 'watchPaths', 'pollIntervalSeconds', 'cancelInProgress'];

/** What a push does to this service: deploy on push, watch paths, polling where no webhook reaches, cancel a build under way. */
function TriggerSettings({ service }: { service: Service }) {
  const update = useUpdate(service.id);
  const [autoDeploy, setAutoDeploy] = useState(service.autoDeploy);
  const [cancel, setCancel] = useState(service.cancelInProgress);
  const [watchPaths, setWatchPaths] = useState(service.watchPaths.join('\n'));
  const [poll, setPoll] = useState(service.pollIntervalSeconds === null ? '' : String(service.pollIntervalSeconds));
  const pathsId = useId();
  const pathsError = fieldError(update.error, 'watchPaths');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const pollValue = poll.trim();
    update.mutate({
      serviceId: service.id,
      autoDeploy,
      cancelInProgress: cancel,
      watchPaths: watchPaths
        .split('\n')
        .map((s) => s.trim())
        .filter(Boolean),
      pollIntervalSeconds: pollValue ? Number(pollValue) : null,
    });
  };
  return (
    <section className="card" aria-labelledby="hook-h">
      <h2 id="hook-h">Git hook settings</h2>
      <form onSubmit={submit} noValidate>
        <label className="check">
          <input type="checkbox" checked={autoDeploy} onChange={(e) => setAutoDeploy(e.target.checked)} /> Deploy on push to{' '}
          <code>{service.branch}</code> (or a new digest of the image)
        </label>
        <label className="check">
          <input type="checkbox" checked={cancel} onChange={(e) => setCancel(e.target.checked)} /> A newer push cancels the build under way
        </label>
        <div className="grid-2">
          <div className="field">
            <label htmlFor={pathsId}>Watch paths (one glob a line)</label>
            <textarea
              id={pathsId}
              rows={3}
              value={watchPaths}
              onChange={(e) => setWatchPaths(e.target.value)}
              placeholder={'apps/web/**\n!**/*.md'}
              aria-invalid={pathsError ? true : undefined}
              aria-describedby={`${pathsId}-hint${pathsError ? ` ${pathsId}-error` : ''}`}
            />
            <span id={`${pathsId}-hint`} className="hint">
              A push touching none of them does not deploy; empty: every push does.
            </span>
            {pathsError ? (
              <span id={`${pathsId}-error`} className="error">
                {pathsError}
              </span>
            ) : null}
          </div>
          <Field
            label="Poll every (seconds)"
            name="pollIntervalSeconds"
            value={poll}
            onChange={setPoll}
            inputMode="numeric"
            error={update.error}
            hint="For a server no webhook reaches: at least 30; blank: off"
          />
        </div>
        {service.poll ? (
          <p className="muted">
            Polling: last checked {formatDate(service.poll.lastCheckedAt)}, next {formatDate(service.poll.nextCheckAt)}
            {service.poll.failures > 0 ? `; ${service.poll.failures} failed in a row: ${service.poll.lastError ?? ''}` : ''}
          </p>
        ) : null}
        <ErrorNotice error={formError(update.error, TRIGGER_FIELDS) && update.error} />
        <button type="submit" className="primary" disabled={update.isPending}>
          Save git hook settings
        </button>
        {update.isSuccess ? (
          <span role="status" className="muted">
            {' '}
            Saved.
          </span>
        ) : null}
      </form>
    </section>
  );
}

interface PreviewVar {
  /** A row's identity while it is edited (keys may be blank or change). */
  row: number;
  key: string;
  value: string;
  secret: boolean;
  stored: boolean;
}

/** Pull-request previews of this service: on or off, how many at once, forks, lifetime, databases, extra variables. */
function PreviewSettings({ service }: { service: Service }) {
  const update = useUpdate(service.id);
  const p = service.previews;
  const [enabled, setEnabled] = useState(p.enabled);
  const [fromForks, setFromForks] = useState(p.fromForks);
  const [maxOpen, setMaxOpen] = useState(String(p.maxOpen));
  const [ttl, setTtl] = useState(p.ttlHours === null ? '' : String(p.ttlHours));
  const [databases, setDatabases] = useState(p.databases);
  const [vars, setVars] = useState<PreviewVar[]>(() =>
    p.env.map((v, i) => ({ row: i, key: v.key, value: v.value, secret: v.secret, stored: true })),
  );
  const dbId = useId();
  const setVar = (i: number, patch: Partial<PreviewVar>) => setVars((list) => list.map((v, j) => (j === i ? { ...v, ...patch } : v)));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    update.mutate({
      serviceId: service.id,
      previews: {
        enabled,
        fromForks,
        maxOpen: Number(maxOpen),
        ttlHours: ttl.trim() ? Number(ttl) : null,
        databases,
        // A stored secret left blank keeps its value.
        env: vars.map((v) => ({ key: v.key.trim(), secret: v.secret, ...(v.stored && v.secret && !v.value ? {} : { value: v.value }) })),
      },
    });
  };
  const error = update.error;
  const e = error ? apiErrorOf(error) : null;
  return (
    <section className="card" aria-labelledby="prev-h">
      <h2 id="prev-h">Previews</h2>
      <form onSubmit={submit} noValidate>
        <label className="check">
          <input type="checkbox" checked={enabled} onChange={(ev) => setEnabled(ev.target.checked)} /> A pull request gets its own preview
          environment
        </label>
        <label className="check">
          <input type="checkbox" checked={fromForks} onChange={(ev) => setFromForks(ev.target.checked)} /> Pull requests from forks too
          (their code runs on this server)
        </label>
        <div className="grid-2">
          <Field
            label="Open previews at most"
            name="previews.maxOpen"
            value={maxOpen}
            onChange={setMaxOpen}
            inputMode="numeric"
            error={error}
          />
          <Field
            label="Tear down after (hours without a push)"
            name="previews.ttlHours"
            value={ttl}
            onChange={setTtl}
            inputMode="numeric"
            error={error}
            hint="Blank: only closing or merging does"
          />
          <div className="field">
            <label htmlFor={dbId}>Databases in a preview</label>
            <select id={dbId} value={databases} onChange={(ev) => setDatabases(ev.target.value as typeof databases)}>
              <option value="copy">a copy of the data</option>
              <option value="empty">empty</option>
              <option value="shared">shared with this environment</option>
            </select>
          </div>
        </div>
        <fieldset className="field">
          <legend>
            <strong>Preview variables</strong>{' '}
            <span className="muted">(set on the preview's copy; PREVIEW_URL, PR_NUMBER, PR_BRANCH are given)</span>
          </legend>
          {vars.length === 0 ? <p className="muted">None.</p> : null}
          {vars.map((v, i) => (
            <div className="row" key={v.row}>
              <label htmlFor={`${dbId}-k${i}`}>Key {i + 1}</label>
              <input id={`${dbId}-k${i}`} value={v.key} onChange={(ev) => setVar(i, { key: ev.target.value })} placeholder="KEY" />
              <label htmlFor={`${dbId}-v${i}`}>Value {i + 1}</label>
              <input
                id={`${dbId}-v${i}`}
                value={v.value}
                type={v.secret ? 'password' : 'text'}
                autoComplete="off"
                onChange={(ev) => setVar(i, { value: ev.target.value })}
                placeholder={v.stored && v.secret ? 'stored (blank keeps it)' : 'value'}
              />
              <label className="check">
                <input type="checkbox" checked={v.secret} onChange={(ev) => setVar(i, { secret: ev.target.checked })} /> Secret
              </label>
              <button type="button" onClick={() => setVars((list) => list.filter((_, j) => j !== i))}>
                Remove variable {v.key || i + 1}
              </button>
            </div>
          ))}
          {e?.field?.startsWith('previews.env') ? <span className="error">{e.message}</span> : null}
          <div>
            <button
              type="button"
              onClick={() =>
                setVars((list) => [
                  ...list,
                  { row: Math.max(-1, ...list.map((x) => x.row)) + 1, key: '', value: '', secret: false, stored: false },
                ])
              }
            >
              Add preview variable
            </button>
          </div>
        </fieldset>
        <ErrorNotice error={formError(error, ['previews.maxOpen', 'previews.ttlHours', 'previews.env']) && error} />
        <button type="submit" className="primary" disabled={update.isPending}>
          Save preview settings
        </button>
        {update.isSuccess ? (
          <span role="status" className="muted">
            {' '}
            Saved.
          </span>
        ) : null}
      </form>
    </section>
  );
}

/** This service's open previews (the project's, where this service is previewed or a sibling). */
function Previews({ service }: { service: Service }) {
  const trpc = useTRPC();
  const every = useLivePoll(10_000);
  const list = useQuery({ ...trpc.webhooks.previews.queryOptions({ projectId: service.projectId }), refetchInterval: every });
  return (
    <section className="card" aria-labelledby="prevs-h">
      <h2 id="prevs-h">Open previews</h2>
      <QueryState query={list} label="previews">
        {({ previews }) => {
          const mine = previews.filter((p) => p.services.some((s) => s.parentServiceId === service.id));
          return mine.length === 0 ? (
            <Empty>No preview of this service is open.</Empty>
          ) : (
            <div className="table-wrap">
              <table>
                <caption className="visually-hidden">Open previews</caption>
                <thead>
                  <tr>
                    <th scope="col">Pull request</th>
                    <th scope="col">Status</th>
                    <th scope="col">URL</th>
                    <th scope="col">Head</th>
                    <th scope="col">Databases</th>
                    <th scope="col">Last push</th>
                  </tr>
                </thead>
                <tbody>
                  {mine.map((p) => {
                    const copy = p.services.find((s) => s.parentServiceId === service.id)?.previewServiceId;
                    return (
                      <tr key={p.id}>
                        <td>
                          #{p.number} {p.title ?? ''} {p.fromFork ? <span className="muted">(fork)</span> : null}
                          {copy ? (
                            <div>
                              <Link to={`/services/${copy}`}>Preview service</Link>
                            </div>
                          ) : null}
                        </td>
                        <td>
                          <StatusBadge status={p.status} />
                          {p.statusReason ? <div className="muted">{p.statusReason}</div> : null}
                        </td>
                        <td>{p.url ? <a href={p.url}>{p.url}</a> : '-'}</td>
                        <td className="mono">
                          {p.headBranch} {p.headSha.slice(0, 7)}
                        </td>
                        <td>{p.databases.map((d) => `${d.mode}${d.filledFrom ? ` (${d.filledFrom})` : ''}`).join(', ') || '-'}</td>
                        <td>{formatDate(p.lastPushAt)}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          );
        }}
      </QueryState>
    </section>
  );
}

/** The project's one webhook URL for every git host, CI and registry: made or rotated (the secret shown once), and its deliveries. */
function ProjectWebhook({ projectId }: { projectId: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const webhook = useQuery({ ...trpc.webhooks.get.queryOptions({ projectId }), retry: false });
  const every = useLivePoll(10_000);
  const deliveries = useQuery({ ...trpc.webhooks.deliveries.queryOptions({ projectId }), refetchInterval: every });
  const [secret, setSecret] = useState<string | null>(null);
  const rotate = useMutation(
    trpc.webhooks.createOrRotate.mutationOptions({
      onSuccess: async ({ webhook: w }) => {
        setSecret(w.secret);
        await queryClient.invalidateQueries({ queryKey: trpc.webhooks.get.queryKey({ projectId }) });
      },
    }),
  );
  const missing = webhook.error && apiErrorOf(webhook.error).status === 404;
  return (
    <section className="card" aria-labelledby="wh-h">
      <h2 id="wh-h">The project's webhook</h2>
      {secret ? <SecretOnce label="The webhook secret" value={secret} onDone={() => setSecret(null)} /> : null}
      {missing ? (
        <p className="muted">No webhook yet: make one, then add its URL and secret to the repository's webhooks.</p>
      ) : webhook.isPending ? (
        <p className="muted">Loading the webhook...</p>
      ) : webhook.error ? (
        <ErrorNotice error={webhook.error} title="Could not load the webhook" />
      ) : webhook.data ? (
        <dl className="kv">
          <dt>URL</dt>
          <dd>
            <code data-testid="webhook-url">{webhook.data.webhook.url}</code>{' '}
            <CopyButton value={webhook.data.webhook.url} label="Copy webhook URL" />
          </dd>
          <dt>Secret made</dt>
          <dd>{formatDate(webhook.data.webhook.rotatedAt)}</dd>
        </dl>
      ) : null}
      <ErrorNotice error={rotate.error} />
      <button type="button" onClick={() => rotate.mutate({ projectId })} disabled={rotate.isPending || webhook.isPending}>
        {missing ? 'Create webhook' : 'Rotate webhook secret'}
      </button>
      <h3>Deliveries</h3>
      <QueryState query={deliveries} label="deliveries">
        {({ deliveries: list }) =>
          list.length === 0 ? (
            <Empty>Nothing delivered to the webhook yet.</Empty>
          ) : (
            <div className="table-wrap">
              <table>
                <caption className="visually-hidden">Webhook deliveries, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Received</th>
                    <th scope="col">Sender</th>
                    <th scope="col">Event</th>
                    <th scope="col">Outcome</th>
                    <th scope="col">Made</th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((d) => (
                    <tr key={d.id}>
                      <td>{formatDate(d.receivedAt)}</td>
                      <td>{d.provider}</td>
                      <td className="mono">{d.event}</td>
                      <td>
                        <StatusBadge status={d.outcome} /> <span className="muted">HTTP {d.httpStatus}</span>
                        <div>{d.reason}</div>
                      </td>
                      <td>
                        {d.deploymentIds.length} {d.deploymentIds.length === 1 ? 'deployment' : 'deployments'}
                        {d.previewIds.length ? `, ${d.previewIds.length} previews` : ''}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </QueryState>
    </section>
  );
}
