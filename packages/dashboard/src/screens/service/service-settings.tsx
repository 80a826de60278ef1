import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { useNavigate } from 'react-router';
import { Confirm, ErrorNotice, Field, QueryState } from '../../components/ui';
import { formError } from '../../lib/api-error';
import { useTRPC } from '../../lib/trpc';
import { ScaleForm } from './scale-form';
import { isDatabase, type Overview, useServiceOverview } from './use-service';

export default function ServiceSettings() {
  const { overview } = useServiceOverview();
  return <QueryState query={overview}>{(data) => <SettingsForm service={data.service} />}</QueryState>;
}

const FIELDS = [
  'branch',
  'rootDir',
  'installCommand',
  'buildCommand',
  'startCommand',
  'dockerfilePath',
  'internalPort',
  'buildMethod',
  'runtimeMode',
];

/** How the service is built and run; the service's deletion. */
function SettingsForm({ service }: { service: Overview['service'] }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [form, setForm] = useState({
    branch: service.branch,
    rootDir: service.rootDir ?? '',
    installCommand: service.installCommand ?? '',
    buildCommand: service.buildCommand ?? '',
    startCommand: service.startCommand ?? '',
    dockerfilePath: service.dockerfilePath ?? '',
    internalPort: String(service.internalPort),
    buildMethod: service.buildMethod,
  });
  const set = (k: keyof typeof form) => (v: string) => setForm((f) => ({ ...f, [k]: v }));
  const update = useMutation(
    trpc.services.update.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.services.overview.queryKey({ serviceId: service.id }) }),
    }),
  );
  const scale = useMutation(
    trpc.services.update.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.services.overview.queryKey({ serviceId: service.id }) }),
    }),
  );
  const remove = useMutation(trpc.services.delete.mutationOptions());
  const source = service.repoUrl !== 'container-image' && !isDatabase(service) && service.repoUrl !== 'storage';
  const nullable = (v: string) => (v.trim() ? v.trim() : null);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    update.mutate({
      serviceId: service.id,
      internalPort: Number(form.internalPort),
      ...(source
        ? {
            branch: form.branch.trim(),
            rootDir: nullable(form.rootDir),
            installCommand: nullable(form.installCommand),
            buildCommand: nullable(form.buildCommand),
            startCommand: nullable(form.startCommand),
            dockerfilePath: nullable(form.dockerfilePath),
            buildMethod: form.buildMethod,
          }
        : {}),
    });
  };
  return (
    <div className="stack">
      <section className="card" aria-labelledby="build-h">
        <h2 id="build-h">Build and run</h2>
        <form onSubmit={submit} noValidate>
          <div className="grid-2">
            {source ? (
              <>
                <Field label="Branch" name="branch" value={form.branch} onChange={set('branch')} error={update.error} />
                <Field label="Root directory" name="rootDir" value={form.rootDir} onChange={set('rootDir')} error={update.error} />
                <Field label="Build method" name="buildMethod" error={update.error}>
                  {({ id, describedBy }) => (
                    <select
                      id={id}
                      aria-describedby={describedBy}
                      value={form.buildMethod}
                      onChange={(e) => set('buildMethod')(e.target.value)}
                    >
                      <option value="auto">auto (Dockerfile when present)</option>
                      <option value="dockerfile">dockerfile</option>
                      <option value="analyzer">analyzer</option>
                    </select>
                  )}
                </Field>
                <Field
                  label="Dockerfile path"
                  name="dockerfilePath"
                  value={form.dockerfilePath}
                  onChange={set('dockerfilePath')}
                  error={update.error}
                />
                <Field
                  label="Install command"
                  name="installCommand"
                  value={form.installCommand}
                  onChange={set('installCommand')}
                  error={update.error}
                />
                <Field
                  label="Build command"
                  name="buildCommand"
                  value={form.buildCommand}
                  onChange={set('buildCommand')}
                  error={update.error}
                />
                <Field
                  label="Start command"
                  name="startCommand"
                  value={form.startCommand}
                  onChange={set('startCommand')}
                  error={update.error}
                />
              </>
            ) : null}
            <Field
              label="Internal port"
              name="internalPort"
              value={form.internalPort}
              onChange={set('internalPort')}
              error={update.error}
              inputMode="numeric"
            />
          </div>
          <ErrorNotice error={formError(update.error, FIELDS) && update.error} />
          <button type="submit" className="primary" disabled={update.isPending}>
            Save settings
          </button>
          {update.isSuccess ? (
            <p role="status" className="alert ok">
              Saved. Deploy to apply.
            </p>
          ) : null}
        </form>
      </section>
      <section className="card" aria-labelledby="scale-h">
        <h2 id="scale-h">Replicas and resources</h2>
        <ScaleForm
          initial={{ replicas: service.replicas, resources: service.resources }}
          error={scale.error}
          pending={scale.isPending}
          saved={scale.isSuccess}
          onSave={(values) => scale.mutate({ serviceId: service.id, ...values })}
        />
      </section>
      <section className="card" aria-labelledby="danger-h">
        <h2 id="danger-h">Delete</h2>
        <p>
          Deleting the service removes its containers, domains, variables, deployments and logs{isDatabase(service) ? ', and its data' : ''}
          .
        </p>
        <Confirm
          trigger={
            <button type="button" className="danger">
              Delete service
            </button>
          }
          title={`Delete ${service.name}?`}
          description={<p>This cannot be undone.</p>}
          typed={service.name}
          action="Delete service"
          onConfirm={async () => {
            await remove.mutateAsync({ serviceId: service.id });
            await queryClient.invalidateQueries();
            navigate('/projects');
          }}
        />
      </section>
    </div>
  );
}
