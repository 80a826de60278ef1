import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { useNavigate } from 'react-router';
import { ErrorNotice, Field, Modal } from '../../components/ui';
import { formError } from '../../lib/api-error';
import { useTRPC } from '../../lib/trpc';

const ENGINES = ['postgres', 'timescale', 'mysql', 'redis', 'mongodb', 'clickhouse'] as const;
type Kind = 'git' | 'image' | 'database' | 'storage';
const FIELDS = ['name', 'repoUrl', 'branch', 'containerImage', 'internalPort', 'rootDir', 'bucket'];

/** A service of one of the kinds the platform runs, in the environment shown. */
export function CreateService(props: {
  open: boolean;
  onOpenChange: (open: boolean) => void;
  projectId: string;
  environmentId: string;
  isDefaultEnvironment: boolean;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [kind, setKind] = useState<Kind>('git');
  const [name, setName] = useState('');
  const [repoUrl, setRepoUrl] = useState('');
  const [branch, setBranch] = useState('main');
  const [image, setImage] = useState('');
  const [port, setPort] = useState('');
  const [rootDir, setRootDir] = useState('');
  const [engine, setEngine] = useState<(typeof ENGINES)[number]>('postgres');
  const [bucket, setBucket] = useState('');
  const [secret, setSecret] = useState<{ accessKeyId: string; secretAccessKey: string } | null>(null);
  const done = async (serviceId: string) => {
    await queryClient.invalidateQueries();
    props.onOpenChange(false);
    navigate(`/services/${serviceId}`);
  };
  const create = useMutation(trpc.apps.createInEnvironment.mutationOptions({ onSuccess: ({ service }) => done(service.id) }));
  const createStorage = useMutation(
    trpc.storage.create.mutationOptions({
      onSuccess: async ({ credentials }) => {
        await queryClient.invalidateQueries();
        setSecret(credentials);
      },
    }),
  );
  const error = kind === 'storage' ? createStorage.error : create.error;
  const pending = create.isPending || createStorage.isPending;
  const portNumber = port.trim() ? Number(port) : undefined;

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const base = { environmentId: props.environmentId, name: name.trim() };
    if (kind === 'git') {
      create.mutate({
        ...base,
        repoFullName: null,
        repoUrl: repoUrl.trim(),
        branch: branch.trim() || undefined,
        rootDir: rootDir.trim() || null,
        internalPort: portNumber,
      });
    } else if (kind === 'image') {
      create.mutate({ ...base, repoUrl: 'container-image', containerImage: image.trim(), internalPort: portNumber });
    } else if (kind === 'database') {
      create.mutate({ ...base, repoUrl: 'database', repoFullName: `database:${engine}` });
    } else {
      createStorage.mutate({ projectId: props.projectId, name: name.trim(), bucket: bucket.trim() || undefined });
    }
  };

  const finish = () => {
    setSecret(null);
    props.onOpenChange(false);
  };
  if (secret) {
    return (
      <Modal open={props.open} onOpenChange={(o) => (o ? null : finish())} title="Storage instance created">
        <p>Its secret key is shown this once. Keep it with the access key:</p>
        <dl className="kv">
          <dt>Access key</dt>
          <dd className="mono">{secret.accessKeyId}</dd>
          <dt>Secret key</dt>
          <dd className="secret-once">{secret.secretAccessKey}</dd>
        </dl>
        <div className="row end">
          <button type="button" className="primary" onClick={finish}>
            Done
          </button>
        </div>
      </Modal>
    );
  }

  return (
    <Modal open={props.open} onOpenChange={props.onOpenChange} title="Create service">
      <form onSubmit={submit} noValidate>
        <fieldset className="field">
          <legend>
            <strong>Kind</strong>
          </legend>
          <div className="row">
            {(
              [
                ['git', 'Git repository'],
                ['image', 'Container image'],
                ['database', 'Database'],
                ['storage', 'Storage (S3)'],
              ] as const
            ).map(([value, label]) => (
              <label key={value} className="check">
                <input type="radio" name="kind" value={value} checked={kind === value} onChange={() => setKind(value)} /> {label}
              </label>
            ))}
          </div>
        </fieldset>
        <Field label="Name" name="name" value={name} onChange={setName} error={error} required />
        {kind === 'git' ? (
          <>
            <Field
              label="Repository URL"
              name="repoUrl"
              value={repoUrl}
              onChange={setRepoUrl}
              error={error}
              placeholder="https://git.example.com/team/app.git"
              required
            />
            <Field label="Branch" name="branch" value={branch} onChange={setBranch} error={error} />
            <Field
              label="Root directory"
              name="rootDir"
              value={rootDir}
              onChange={setRootDir}
              error={error}
              hint="Optional: where the app lives in the repository."
            />
          </>
        ) : null}
        {kind === 'image' ? (
          <Field label="Image" name="containerImage" value={image} onChange={setImage} error={error} placeholder="nginx:1.27" required />
        ) : null}
        {kind === 'git' || kind === 'image' ? (
          <Field
            label="Internal port"
            name="internalPort"
            value={port}
            onChange={setPort}
            error={error}
            inputMode="numeric"
            hint="The port the app listens on."
          />
        ) : null}
        {kind === 'database' ? (
          <Field label="Engine" name="engine" error={error}>
            {({ id, describedBy }) => (
              <select
                id={id}
                aria-describedby={describedBy}
                value={engine}
                onChange={(e) => setEngine(e.target.value as (typeof ENGINES)[number])}
              >
                {ENGINES.map((e) => (
                  <option key={e} value={e}>
                    {e}
                  </option>
                ))}
              </select>
            )}
          </Field>
        ) : null}
        {kind === 'storage' ? (
          <>
            <Field
              label="Bucket"
              name="bucket"
              value={bucket}
              onChange={setBucket}
              error={error}
              hint="Optional: defaults to the service's slug."
            />
            {!props.isDefaultEnvironment ? (
              <p className="muted">Storage instances are created in the project's default environment.</p>
            ) : null}
          </>
        ) : null}
        <ErrorNotice error={formError(error, FIELDS) && error} />
        <div className="row end">
          <button type="button" onClick={() => props.onOpenChange(false)}>
            Cancel
          </button>
          <button type="submit" className="primary" disabled={pending}>
            {pending ? <span className="spinner" aria-hidden="true" /> : null}
            Create service
          </button>
        </div>
      </form>
    </Modal>
  );
}
