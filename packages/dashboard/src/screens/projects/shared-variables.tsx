import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';
import { Confirm, Empty, ErrorNotice, Field, QueryState } from '../../components/ui';
import { formError } from '../../lib/api-error';
import { timeAgo } from '../../lib/format';
import { useTRPC } from '../../lib/trpc';

/**
 * The project's shared variables: every service of the project sees them unless it sets the same key,
 * and `${shared.KEY}` references them. Secret values are never shown again. The API replaces the whole
 * set at once: a change sends every other key back without its value, which keeps what is stored.
 */
export function SharedVariables({ projectId }: { projectId: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const shared = useQuery(trpc.variables.shared.queryOptions({ projectId }));
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const [secret, setSecret] = useState(false);
  const [saved, setSaved] = useState('');
  const secretId = useId();
  const replace = useMutation(
    trpc.variables.replaceShared.mutationOptions({
      onSuccess: (data) => queryClient.setQueryData(trpc.variables.shared.queryKey({ projectId }), data),
    }),
  );
  const kept = (except: string) =>
    Object.fromEntries(
      Object.entries(shared.data?.env ?? {})
        .filter(([k]) => k !== except)
        .map(([k, v]) => [k, { secret: v.secret }]),
    );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const k = key.trim();
    replace.mutate(
      { projectId, env: { ...kept(k), [k]: { value, secret } } },
      {
        onSuccess: () => {
          setSaved(k);
          setKey('');
          setValue('');
          setSecret(false);
        },
      },
    );
  };
  return (
    <section className="stack" aria-labelledby="shared-h">
      <h2 id="shared-h">Shared variables</h2>
      <p className="muted">
        Every service of the project sees these unless it sets the same key; reference one as <code>{'${shared.KEY}'}</code>.
      </p>
      <form className="inline" onSubmit={submit} noValidate>
        <Field label="Shared key" name="key" value={key} onChange={setKey} error={replace.error} placeholder="LOG_LEVEL" />
        <Field label="Shared value" name="value" value={value} onChange={setValue} error={replace.error} />
        <div className="field">
          <label className="check" htmlFor={secretId}>
            <input id={secretId} type="checkbox" checked={secret} onChange={(e) => setSecret(e.target.checked)} /> Secret (shown once)
          </label>
        </div>
        <button type="submit" disabled={replace.isPending || !key.trim()}>
          Save shared variable
        </button>
      </form>
      <ErrorNotice error={formError(replace.error, ['key', 'value']) && replace.error} />
      {saved ? (
        <p role="status" className="muted">
          Saved {saved}
        </p>
      ) : null}
      <QueryState query={shared} label="shared variables">
        {({ env }) =>
          Object.keys(env).length === 0 ? (
            <Empty>No shared variables.</Empty>
          ) : (
            <div className="table-wrap">
              <table>
                <caption className="visually-hidden">Shared variables</caption>
                <thead>
                  <tr>
                    <th scope="col">Key</th>
                    <th scope="col">Value</th>
                    <th scope="col">Changed</th>
                    <th scope="col">Actions</th>
                  </tr>
                </thead>
                <tbody>
                  {Object.entries(env)
                    .sort(([a], [b]) => a.localeCompare(b))
                    .map(([k, v]) => (
                      <tr key={k}>
                        <th scope="row" className="mono">
                          {k}
                        </th>
                        <td className="mono">
                          {v.secret ? (
                            <span title="secret: not shown">
                              •••••• <span className="visually-hidden">(secret, hidden)</span>
                            </span>
                          ) : (
                            v.value
                          )}
                        </td>
                        <td>{timeAgo(v.updatedAt)}</td>
                        <td>
                          <Confirm
                            trigger={
                              <button type="button" aria-label={`Delete shared ${k}`}>
                                Delete
                              </button>
                            }
                            title={`Delete shared variable ${k}?`}
                            description={<p>Services that use it see it gone at their next deployment.</p>}
                            action="Delete variable"
                            onConfirm={() => replace.mutateAsync({ projectId, env: kept(k) })}
                          />
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
