import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { ReferenceInput } from '../../components/reference-input';
import { Confirm, Empty, ErrorNotice, Field, QueryState } from '../../components/ui';
import { formError } from '../../lib/api-error';
import { ENV_KEY } from '../../lib/env-suggest';
import { useTRPC } from '../../lib/trpc';
import { DeployActions } from './deploy-actions';
import { type Overview, useServiceOverview } from './use-service';

export default function Variables() {
  const { overview } = useServiceOverview();
  return <QueryState query={overview}>{(data) => <VariablesView data={data} />}</QueryState>;
}

type EnvVar = Overview['env'][number];

function VariablesView({ data }: { data: Overview }) {
  const serviceId = data.service.id;
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const keys = useQuery(trpc.services.suggestionKeys.queryOptions({ serviceId }));
  const suggestions = [
    ...(keys.data?.suggestions ?? []),
    ...(keys.data?.databaseVariables ?? []).map((d) => ({ key: d.key, label: d.label })),
  ];
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const [secret, setSecret] = useState(false);
  const [revealed, setRevealed] = useState<Record<string, string>>({});
  const [saved, setSaved] = useState<string | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.services.overview.queryKey({ serviceId }) });
  const set = useMutation(
    trpc.env.set.mutationOptions({
      onSuccess: async (_r, input) => {
        setSaved(input.key);
        setKey('');
        setValue('');
        setSecret(false);
        setRevealed({});
        await refresh();
      },
    }),
  );
  const remove = useMutation(trpc.env.delete.mutationOptions({ onSuccess: refresh }));
  const reveal = useMutation(trpc.env.reveal.mutationOptions());
  const keyProblem = key && !ENV_KEY.test(key) ? 'Upper-case letters, digits and underscores, not starting with a digit.' : undefined;

  const submit = (e: FormEvent) => {
    e.preventDefault();
    setSaved(null);
    set.mutate({ serviceId, key: key.trim(), value, secret });
  };
  const edit = async (v: EnvVar) => {
    setKey(v.key);
    setSecret(v.secret);
    setValue(v.secret ? (revealed[v.id] ?? '') : v.value);
    document.getElementById('var-editor')?.scrollIntoView({ block: 'nearest' });
  };

  return (
    <div className="stack">
      <section aria-labelledby="vars-h">
        <h2 id="vars-h">Environment variables</h2>
        <p className="muted">
          Values may reference another service's variable as <code>{'${slug.KEY}'}</code>. Changes apply at the next deployment.
        </p>
        {data.env.length === 0 ? (
          <Empty>No variables yet.</Empty>
        ) : (
          <div className="table-wrap">
            <table>
              <caption className="visually-hidden">Variables</caption>
              <thead>
                <tr>
                  <th scope="col">Key</th>
                  <th scope="col">Value</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {data.env.map((v) => {
                  const shown = v.secret ? revealed[v.id] : v.value;
                  return (
                    <tr key={v.id}>
                      <td className="mono">
                        {v.key} {v.secret ? <span className="badge neutral">secret</span> : null}
                      </td>
                      <td className="mono" style={{ overflowWrap: 'anywhere' }}>
                        {shown === undefined ? (
                          <>
                            <span aria-hidden="true">••••••••</span>
                            <span className="visually-hidden">hidden value</span>
                          </>
                        ) : (
                          shown
                        )}
                        {v.resolvedValue && v.resolvedValue !== v.value ? <div className="muted">resolves to {v.resolvedValue}</div> : null}
                        {v.problems.map((p) => (
                          <div key={p} className="error-text">
                            {p}
                          </div>
                        ))}
                      </td>
                      <td>
                        <div className="row">
                          {v.secret ? (
                            shown === undefined ? (
                              <button
                                type="button"
                                aria-label={`Reveal ${v.key}`}
                                onClick={async () => {
                                  const r = await reveal.mutateAsync({ serviceId, envId: v.id });
                                  setRevealed((prev) => ({ ...prev, [v.id]: r.value }));
                                }}
                              >
                                Reveal
                              </button>
                            ) : (
                              <button
                                type="button"
                                aria-label={`Hide ${v.key}`}
                                onClick={() =>
                                  setRevealed((prev) => {
                                    const { [v.id]: _, ...rest } = prev;
                                    return rest;
                                  })
                                }
                              >
                                Hide
                              </button>
                            )
                          ) : null}
                          <button type="button" aria-label={`Edit ${v.key}`} onClick={() => edit(v)}>
                            Edit
                          </button>
                          <Confirm
                            trigger={
                              <button type="button" aria-label={`Delete ${v.key}`}>
                                Delete
                              </button>
                            }
                            title={`Delete ${v.key}?`}
                            description={<p>The next deployment runs without it.</p>}
                            action="Delete variable"
                            onConfirm={() => remove.mutateAsync({ serviceId, envId: v.id })}
                          />
                        </div>
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
        <ErrorNotice error={reveal.error ?? remove.error} />
      </section>

      <section className="card" aria-labelledby="var-editor">
        <h2 id="var-editor">Set a variable</h2>
        <form onSubmit={submit} noValidate>
          <Field
            label="Key"
            name="key"
            value={key}
            onChange={(k) => setKey(k.toUpperCase())}
            error={set.error}
            hint={keyProblem ?? 'For example DATABASE_URL.'}
          />
          <Field label="Value" name="value" error={set.error} hint="Type ${ for references to other services' variables.">
            {({ id, describedBy, invalid }) => (
              <ReferenceInput
                id={id}
                value={value}
                onChange={setValue}
                suggestions={suggestions}
                describedBy={describedBy}
                invalid={invalid}
                type={secret ? 'password' : 'text'}
              />
            )}
          </Field>
          <label className="check">
            <input type="checkbox" checked={secret} onChange={(e) => setSecret(e.target.checked)} /> Secret (never shown again, masked in
            logs)
          </label>
          <ErrorNotice error={formError(set.error, ['key', 'value', 'secret']) && set.error} />
          <button type="submit" className="primary" disabled={set.isPending || !key}>
            Save variable
          </button>
          {saved ? (
            <p role="status" className="alert ok">
              Saved {saved}. Deploy to apply it.
            </p>
          ) : null}
        </form>
      </section>
      <section aria-labelledby="apply-h">
        <h2 id="apply-h">Apply</h2>
        <DeployActions overview={data} />
      </section>
    </div>
  );
}
