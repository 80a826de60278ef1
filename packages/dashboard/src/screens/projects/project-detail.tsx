import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';
import { Link, useNavigate, useParams, useSearchParams } from 'react-router';
import { useLivePoll } from '../../components/live-updates';
import { ServiceList } from '../../components/service-list';
import { Confirm, Empty, ErrorNotice, Field, Modal, PageTitle, QueryState } from '../../components/ui';
import { formError } from '../../lib/api-error';
import { useTRPC } from '../../lib/trpc';
import { CreateService } from './create-service';
import { SharedVariables } from './shared-variables';

/** A project: its environments, the services of the one shown, and what can be done to them. */
export default function ProjectDetail() {
  const { projectSlug = '' } = useParams();
  const trpc = useTRPC();
  // Service states change on their own (deploys, crashes): refreshed while the page is open.
  const every = useLivePoll(5_000);
  const project = useQuery({ ...trpc.projects.bySlug.queryOptions({ projectSlug }), refetchInterval: every });
  return (
    <QueryState query={project} label="the project">
      {({ project: p }) => <ProjectView project={p} />}
    </QueryState>
  );
}

type Project = import('../../lib/trpc').RouterOutputs['projects']['bySlug']['project'];

function ProjectView({ project }: { project: Project }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [params, setParams] = useSearchParams();
  const environments = useQuery(trpc.environments.list.queryOptions({ projectId: project.id }));
  const [creating, setCreating] = useState(false);
  const [envDialog, setEnvDialog] = useState<'create' | 'clone' | null>(null);
  const [filter, setFilter] = useState('');
  const selectId = useId();
  const filterId = useId();
  const deleteProject = useMutation(trpc.projects.delete.mutationOptions());
  const deleteEnvironment = useMutation(trpc.environments.delete.mutationOptions());
  const deployAll = useMutation(
    trpc.deploy.project.mutationOptions({ onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.projects.bySlug.queryKey() }) }),
  );

  const envs = environments.data?.environments ?? [];
  const current = envs.find((e) => e.name === params.get('env')) ?? envs.find((e) => e.isDefault) ?? envs[0];
  const needle = filter.trim().toLowerCase();
  const services = project.services.filter(
    (s) => (!current || s.environmentId === current.id) && (!needle || s.name.toLowerCase().includes(needle)),
  );

  return (
    <>
      <div className="breadcrumbs">
        <Link to="/projects">Projects</Link> / {project.name}
      </div>
      <PageTitle
        actions={
          <>
            {current ? (
              <button type="button" className="primary" onClick={() => setCreating(true)}>
                Create service
              </button>
            ) : null}
            <Link className="button" to={`/projects/${project.slug}/audit`}>
              Audit log
            </Link>
            <Confirm
              trigger={<button type="button">Delete project</button>}
              title={`Delete project ${project.name}?`}
              description={
                <p>Its services, databases (with their data), domains, variables and deployments go with it. This cannot be undone.</p>
              }
              typed={project.name}
              action="Delete project"
              onConfirm={async () => {
                await deleteProject.mutateAsync({ projectId: project.id });
                await queryClient.invalidateQueries();
                navigate('/projects');
              }}
            />
          </>
        }
      >
        {project.name}
      </PageTitle>
      {project.description ? <p className="muted">{project.description}</p> : null}

      <section aria-labelledby={`${selectId}-h`}>
        <h2 id={`${selectId}-h`}>Environments</h2>
        <QueryState query={environments} label="environments">
          {() => (
            <div className="row">
              <label htmlFor={selectId}>Environment</label>
              <select
                id={selectId}
                value={current?.name ?? ''}
                onChange={(e) => {
                  params.set('env', e.target.value);
                  setParams(params, { replace: true });
                }}
              >
                {envs.map((e) => (
                  <option key={e.id} value={e.name}>
                    {e.name} ({e.serviceCount} services){e.isDefault ? ', default' : ''}
                  </option>
                ))}
              </select>
              <button type="button" onClick={() => setEnvDialog('create')}>
                Create environment
              </button>
              {current ? (
                <button type="button" onClick={() => setEnvDialog('clone')}>
                  Clone environment
                </button>
              ) : null}
              {current && envs.length > 1 ? (
                <Confirm
                  trigger={<button type="button">Delete environment</button>}
                  title={`Delete environment ${current.name}?`}
                  description={<p>Its {current.serviceCount} services go with it, databases and their data included.</p>}
                  typed={current.name}
                  action="Delete environment"
                  onConfirm={async () => {
                    await deleteEnvironment.mutateAsync({ environmentId: current.id });
                    params.delete('env');
                    setParams(params, { replace: true });
                    await queryClient.invalidateQueries();
                  }}
                />
              ) : null}
            </div>
          )}
        </QueryState>
      </section>

      <section aria-labelledby={`${selectId}-s`}>
        <div className="spread">
          <h2 id={`${selectId}-s`}>Services</h2>
          <div className="row">
            <label htmlFor={filterId}>Filter services</label>
            <input id={filterId} type="search" value={filter} onChange={(e) => setFilter(e.target.value)} />
            {current && services.length > 0 ? (
              <Confirm
                trigger={<button type="button">Deploy all</button>}
                title={`Deploy every service of ${current.name}?`}
                description={
                  <p>A deployment of each service of the environment is queued; each keeps serving until its new version is live.</p>
                }
                action="Deploy all"
                onConfirm={() => deployAll.mutateAsync({ projectId: project.id, environmentId: current.id })}
              />
            ) : null}
          </div>
        </div>
        <ErrorNotice error={deployAll.error} />
        {deployAll.data ? (
          <p role="status" className="muted">
            Queued {deployAll.data.deployments.length} deployment{deployAll.data.deployments.length === 1 ? '' : 's'}.
          </p>
        ) : null}
        {services.length === 0 ? (
          <Empty>
            {needle
              ? 'No service matches the filter.'
              : 'No services in this environment yet. Create one from a Git repository, an image, a database or storage.'}
          </Empty>
        ) : (
          <ServiceList services={services} />
        )}
      </section>

      <SharedVariables projectId={project.id} />

      {current ? (
        <CreateService
          open={creating}
          onOpenChange={setCreating}
          projectId={project.id}
          environmentId={current.id}
          isDefaultEnvironment={current.isDefault}
        />
      ) : null}
      {envDialog ? (
        <EnvironmentDialog
          mode={envDialog}
          projectId={project.id}
          source={current}
          onClose={(name) => {
            setEnvDialog(null);
            if (name) {
              params.set('env', name);
              setParams(params, { replace: true });
            }
          }}
        />
      ) : null}
    </>
  );
}

function EnvironmentDialog(props: {
  mode: 'create' | 'clone';
  projectId: string;
  source: { id: string; name: string } | undefined;
  onClose: (name?: string) => void;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [credentials, setCredentials] = useState<Array<{ serviceId?: string; accessKeyId: string; secretAccessKey: string }> | null>(null);
  const create = useMutation(trpc.environments.create.mutationOptions());
  const clone = useMutation(trpc.environments.clone.mutationOptions());
  const mutation = props.mode === 'create' ? create : clone;
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    try {
      if (props.mode === 'create') await create.mutateAsync({ projectId: props.projectId, name: name.trim() });
      else if (props.source) {
        const result = await clone.mutateAsync({ environmentId: props.source.id, name: name.trim() });
        await queryClient.invalidateQueries();
        if (result.storageCredentials.length > 0) {
          setCredentials(result.storageCredentials);
          return;
        }
      }
      await queryClient.invalidateQueries();
      props.onClose(name.trim());
    } catch {
      // shown beside the field
    }
  };
  const title = props.mode === 'create' ? 'Create environment' : `Clone environment ${props.source?.name ?? ''}`;
  if (credentials) {
    return (
      <Modal open onOpenChange={() => props.onClose(name.trim())} title="Environment cloned">
        <p>The copied storage instances have new key pairs, shown this once:</p>
        {credentials.map((c) => (
          <dl key={c.accessKeyId} className="kv">
            <dt>Access key</dt>
            <dd className="mono">{c.accessKeyId}</dd>
            <dt>Secret key</dt>
            <dd className="secret-once">{c.secretAccessKey}</dd>
          </dl>
        ))}
        <button type="button" className="primary" onClick={() => props.onClose(name.trim())}>
          Done
        </button>
      </Modal>
    );
  }
  return (
    <Modal open onOpenChange={(open) => (open ? null : props.onClose())} title={title}>
      <form onSubmit={submit} noValidate>
        {props.mode === 'clone' ? (
          <p className="muted">Copies every service with its settings and variables; databases start empty; nothing is deployed.</p>
        ) : null}
        <Field
          label="Name"
          name="name"
          value={name}
          onChange={setName}
          error={mutation.error}
          hint="Lower-case letters, digits and hyphens, e.g. staging."
          required
        />
        <ErrorNotice error={formError(mutation.error, ['name']) && mutation.error} />
        <div className="row end">
          <button type="button" onClick={() => props.onClose()}>
            Cancel
          </button>
          <button type="submit" className="primary" disabled={mutation.isPending}>
            {props.mode === 'create' ? 'Create environment' : 'Clone environment'}
          </button>
        </div>
      </form>
    </Modal>
  );
}
