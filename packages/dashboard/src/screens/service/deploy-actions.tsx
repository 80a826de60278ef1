import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { Confirm, ErrorNotice } from '../../components/ui';
import { isFinished } from '../../lib/format';
import { useTRPC } from '../../lib/trpc';
import type { Overview } from './use-service';

/** Deploy, abort the deployment under way, roll back to an earlier one that went live. */
export function DeployActions({ overview }: { overview: Overview }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const serviceId = overview.service.id;
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.services.overview.queryKey({ serviceId }) });
  const deploy = useMutation(
    trpc.deployments.create.mutationOptions({
      onSuccess: async ({ deployment }) => {
        await refresh();
        navigate(`/services/${serviceId}/deployments/${deployment.id}`);
      },
    }),
  );
  const abort = useMutation(trpc.deployments.abort.mutationOptions({ onSettled: refresh }));
  const rollback = useMutation(
    trpc.deployments.rollback.mutationOptions({
      onSuccess: async ({ deployment }) => {
        await refresh();
        navigate(`/services/${serviceId}/deployments/${deployment.id}`);
      },
    }),
  );
  const inProgress = overview.deployments.find((d) => !isFinished(d.status));
  // The newest deployment that went live before the one serving now.
  const target = overview.deployments.find((d) => d.status === 'succeeded' && d.id !== overview.liveDeploymentId && d.imageTag);
  return (
    <div className="stack">
      <div className="row">
        <button type="button" className="primary" onClick={() => deploy.mutate({ serviceId })} disabled={deploy.isPending}>
          {deploy.isPending ? <span className="spinner" aria-hidden="true" /> : null}
          Deploy
        </button>
        {inProgress ? (
          <Confirm
            trigger={<button type="button">Abort</button>}
            title="Abort the deployment?"
            description={<p>The deployment under way ({inProgress.status}) stops; the version serving now keeps serving.</p>}
            action="Abort"
            onConfirm={() => abort.mutateAsync({ deploymentId: inProgress.id })}
          />
        ) : null}
        {target ? (
          <Confirm
            trigger={<button type="button">Roll back</button>}
            title="Roll back?"
            description={
              <p>
                Runs the image of deployment <code>{target.id}</code> again (from {new Date(target.createdAt).toLocaleString()}).
              </p>
            }
            action="Roll back"
            danger={false}
            onConfirm={() => rollback.mutateAsync({ deploymentId: target.id })}
          />
        ) : null}
      </div>
      <ErrorNotice error={deploy.error ?? abort.error ?? rollback.error} />
    </div>
  );
}
