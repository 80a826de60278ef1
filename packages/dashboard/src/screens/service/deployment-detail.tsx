import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useEffect, useState } from 'react';
import { Link, useParams } from 'react-router';
import { LogView } from '../../components/log-view';
import { useLivePoll } from '../../components/live-updates';
import { useDeploymentLog } from '../../components/use-deployment-log';
import { Confirm, ErrorNotice, Field, QueryState, StatusBadge } from '../../components/ui';
import { formError } from '../../lib/api-error';
import { formatDate, isFinished } from '../../lib/format';
import { useTRPC } from '../../lib/trpc';

/** One deployment: its state (live), its build log streamed as it is written, abort, and the AI's reading of a failure. */
export default function DeploymentDetail() {
  const { deploymentId = '', serviceId = '' } = useParams();
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const every = useLivePoll(2_000);
  const deployment = useQuery({
    ...trpc.deployments.get.queryOptions({ deploymentId }),
    refetchInterval: (q) => (q.state.data && isFinished(q.state.data.deployment.status) ? false : every),
  });
  const log = useDeploymentLog(deploymentId);
  const abort = useMutation(
    trpc.deployments.abort.mutationOptions({
      onSettled: () => queryClient.invalidateQueries({ queryKey: trpc.deployments.get.queryKey({ deploymentId }) }),
    }),
  );
  const status = deployment.data?.deployment.status;
  // The server ends the stream when the deployment finishes: one more read of its state then.
  const streamEnded = log.ended;
  // biome-ignore lint/correctness/useExhaustiveDependencies: on the stream's end only
  useEffect(() => {
    if (streamEnded) void queryClient.invalidateQueries({ queryKey: trpc.deployments.get.queryKey({ deploymentId }) });
  }, [streamEnded]);

  return (
    <QueryState query={deployment} label="the deployment">
      {({ deployment: d }) => (
        <div className="stack">
          <div className="breadcrumbs">
            <Link to={`/services/${serviceId}/deployments`}>Deployments</Link> / <span className="mono">{d.id}</span>
          </div>
          <div className="spread">
            <h2>
              Deployment <span className="mono">{d.id.slice(0, 8)}</span>{' '}
              <span aria-live="polite">
                <StatusBadge status={d.status} label="Deployment status" />
              </span>
            </h2>
            {!isFinished(d.status) ? (
              <Confirm
                trigger={<button type="button">Abort</button>}
                title="Abort this deployment?"
                description={<p>The build or start stops; the version serving now keeps serving.</p>}
                action="Abort"
                onConfirm={() => abort.mutateAsync({ deploymentId })}
              />
            ) : null}
          </div>
          <ErrorNotice error={abort.error} />
          <dl className="kv">
            <dt>Trigger</dt>
            <dd>
              {d.trigger}
              {d.rollbackOf ? (
                <>
                  {' '}
                  of <Link to={`/services/${serviceId}/deployments/${d.rollbackOf}`}>{d.rollbackOf.slice(0, 8)}</Link>
                </>
              ) : null}
            </dd>
            <dt>Commit</dt>
            <dd className="mono">{d.commitSha ?? '-'}</dd>
            <dt>Image</dt>
            <dd className="mono">{d.imageTag ?? '-'}</dd>
            <dt>Started</dt>
            <dd>{formatDate(d.startedAt)}</dd>
            <dt>Finished</dt>
            <dd>{formatDate(d.finishedAt)}</dd>
          </dl>
          <h3>Build log</h3>
          {log.error ? <ErrorNotice error={log.error} title="The log stopped" /> : null}
          {log.loading ? (
            <p role="status" className="muted">
              <span className="spinner" aria-hidden="true" /> Reading the log: {log.read.toLocaleString('en')} lines so far
            </p>
          ) : null}
          <LogView lines={log.lines} version={log.version} label="Build log" live={!streamEnded && !isFinished(status ?? 'queued')} />
          {d.status === 'failed' ? <Explain deploymentId={d.id} /> : null}
        </div>
      )}
    </QueryState>
  );
}

function Explain({ deploymentId }: { deploymentId: string }) {
  const trpc = useTRPC();
  // Admins see the connected providers; for others the provider is typed.
  const settings = useQuery({ ...trpc.settings.get.queryOptions(), retry: false });
  const providers = settings.data?.settings.aiProviders ?? [];
  const [providerId, setProviderId] = useState('');
  const [model, setModel] = useState('');
  const explain = useMutation(trpc.ai.explainFailure.mutationOptions());
  const chosen = providerId || providers[0]?.providerId || '';
  const submit = (e: FormEvent) => {
    e.preventDefault();
    explain.mutate({ deploymentId, providerId: chosen, model: model.trim() });
  };
  const x = explain.data?.explanation;
  return (
    <section className="card" aria-labelledby="ai-h">
      <h3 id="ai-h">Why did it fail?</h3>
      <p className="muted">Sends the end of the log (secrets masked) and the build settings to a connected AI provider.</p>
      <form className="inline" onSubmit={submit} noValidate>
        {providers.length > 0 ? (
          <Field label="Provider" name="providerId" error={explain.error}>
            {({ id, describedBy }) => (
              <select id={id} aria-describedby={describedBy} value={chosen} onChange={(e) => setProviderId(e.target.value)}>
                {providers.map((p) => (
                  <option key={p.providerId} value={p.providerId}>
                    {p.providerId} ({p.kind})
                  </option>
                ))}
              </select>
            )}
          </Field>
        ) : (
          <Field label="Provider" name="providerId" value={providerId} onChange={setProviderId} error={explain.error} />
        )}
        <Field label="Model" name="model" value={model} onChange={setModel} error={explain.error} placeholder="gpt-4o-mini" />
        <button type="submit" className="primary" disabled={explain.isPending}>
          {explain.isPending ? <span className="spinner" aria-hidden="true" /> : null}
          Explain failure
        </button>
      </form>
      <ErrorNotice error={formError(explain.error, ['providerId', 'model']) && explain.error} />
      {x ? (
        <div role="status">
          <h4>Summary</h4>
          <p>{x.summary}</p>
          <h4>Likely cause</h4>
          <p>{x.likelyCause}</p>
          <h4>Suggested fix</h4>
          <p>{x.suggestedFix}</p>
          {x.commands.length > 0 ? <pre className="secret-once">{x.commands.join('\n')}</pre> : null}
        </div>
      ) : null}
    </section>
  );
}
