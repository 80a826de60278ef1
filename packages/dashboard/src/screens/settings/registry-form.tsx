import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useEffect, useState } from 'react';
import { ErrorNotice, Field, QueryState, StatusBadge } from '../../components/ui';
import { formError } from '../../lib/api-error';
import { type RouterInputs, type RouterOutputs, useTRPC } from '../../lib/trpc';

type Registry = RouterOutputs['servers']['registry']['registry'];
type RegistryInput = RouterInputs['servers']['setRegistry'];
const FIELDS = ['kind', 'address', 'username', 'password'];

/** The cluster's image registry (GET/PUT /api/registry): the platform's own, or an external one whose password is write-only. */
export function RegistrySettings() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const registry = useQuery(trpc.servers.registry.queryOptions());
  const save = useMutation(
    trpc.servers.setRegistry.mutationOptions({ onSuccess: (data) => queryClient.setQueryData(trpc.servers.registry.queryKey(), data) }),
  );
  return (
    <section className="card" aria-labelledby="reg-h">
      <h2 id="reg-h">Image registry</h2>
      <QueryState query={registry} label="the registry">
        {({ registry: r }) => (
          <RegistryForm registry={r} error={save.error} pending={save.isPending} saved={save.isSuccess} onSave={save.mutate} />
        )}
      </QueryState>
    </section>
  );
}

/** What is in use and the form to change it: the platform's own sends `{kind}` alone; an external one its address and credentials. */
export function RegistryForm(props: {
  registry: Registry;
  error: unknown;
  pending: boolean;
  saved: boolean;
  onSave: (input: RegistryInput) => void;
}) {
  const { registry, error: saveError } = props;
  const [kind, setKind] = useState(registry.kind);
  const [address, setAddress] = useState(registry.kind === 'external' ? (registry.address ?? '') : '');
  const [username, setUsername] = useState(registry.username ?? '');
  const [password, setPassword] = useState('');
  // The password is write-only: once saved, the field empties.
  useEffect(() => {
    if (props.saved) setPassword('');
  }, [props.saved]);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    props.onSave(kind === 'platform' ? { kind } : { kind, address: address.trim(), username: username.trim(), password });
  };
  return (
    <>
      <dl className="kv">
        <dt>In use</dt>
        <dd>{registry.kind === 'platform' ? 'the platform’s own' : 'external'}</dd>
        <dt>Address</dt>
        <dd className="mono">{registry.address ?? 'not started yet'}</dd>
        <dt>Answers</dt>
        <dd>
          <StatusBadge status={registry.running ? 'running' : 'failed'} label="Registry" />
        </dd>
      </dl>
      <form onSubmit={submit} noValidate>
        <fieldset>
          <legend>Registry</legend>
          <label className="check">
            <input type="radio" name="registry-kind" checked={kind === 'platform'} onChange={() => setKind('platform')} /> The platform’s
            own
          </label>
          <label className="check">
            <input type="radio" name="registry-kind" checked={kind === 'external'} onChange={() => setKind('external')} /> An external
            registry
          </label>
        </fieldset>
        {kind === 'external' ? (
          <div className="grid-2">
            <Field
              label="Registry address"
              name="address"
              value={address}
              onChange={setAddress}
              error={saveError}
              hint="host or host:port"
            />
            <Field label="Registry username" name="username" value={username} onChange={setUsername} error={saveError} autoComplete="off" />
            <Field
              label="Registry password"
              name="password"
              type="password"
              value={password}
              onChange={setPassword}
              error={saveError}
              autoComplete="new-password"
              hint="Write-only, stored encrypted: type it each time you save (it is checked with the registry first)."
            />
          </div>
        ) : null}
        <ErrorNotice error={formError(saveError, FIELDS) && saveError} />
        <button type="submit" className="primary" disabled={props.pending}>
          {props.pending ? 'Checking the registry…' : 'Save registry'}
        </button>
        {props.saved ? (
          <p className="alert ok" role="status">
            Saved.
          </p>
        ) : null}
      </form>
    </>
  );
}
