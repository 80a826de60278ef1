import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { SecretOnce } from '../../components/secret-once';
import { Confirm, Empty, ErrorNotice, Field, QueryState } from '../../components/ui';
import { formError } from '../../lib/api-error';
import { formatDate, timeAgo } from '../../lib/format';
import { useTRPC } from '../../lib/trpc';

export const SCOPES = [
  'project:read',
  'project:write',
  'deploy:write',
  'logs:read',
  'env:read',
  'env:write',
  'db:manage',
  'admin',
] as const;
type Scope = (typeof SCOPES)[number];

/** Personal tokens: made with a name and scopes (shown once), listed, revoked. */
export default function PersonalTokens() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const list = useQuery(trpc.user.listTokens.queryOptions());
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<Scope[]>(['project:read']);
  const [expires, setExpires] = useState('');
  const [created, setCreated] = useState<string | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.user.listTokens.queryKey() });
  const create = useMutation(
    trpc.user.createToken.mutationOptions({
      onSuccess: async ({ token }) => {
        setCreated(token);
        setName('');
        await refresh();
      },
    }),
  );
  const revoke = useMutation(trpc.user.deleteToken.mutationOptions({ onSuccess: refresh }));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate({ name: name.trim(), scopes, expiresAt: expires ? new Date(`${expires}T23:59:59Z`).toISOString() : undefined });
  };
  return (
    <div className="stack">
      <section className="card" aria-labelledby="tok-new">
        <h2 id="tok-new">Create a personal token</h2>
        <p className="muted">A token acts as you, narrowed to its scopes: for the CLI, scripts and CI.</p>
        {created ? <SecretOnce label="Your new token" value={created} onDone={() => setCreated(null)} /> : null}
        <form onSubmit={submit} noValidate>
          <Field label="Token name" name="name" value={name} onChange={setName} error={create.error} placeholder="laptop CLI" />
          <fieldset className="field">
            <legend>
              <strong>Scopes</strong>
            </legend>
            <div className="grid-2">
              {SCOPES.map((s) => (
                <label key={s} className="check">
                  <input
                    type="checkbox"
                    checked={scopes.includes(s)}
                    onChange={(e) => setScopes((prev) => (e.target.checked ? [...prev, s] : prev.filter((x) => x !== s)))}
                  />{' '}
                  {s}
                </label>
              ))}
            </div>
          </fieldset>
          <Field
            label="Expires on"
            name="expiresAt"
            type="date"
            value={expires}
            onChange={setExpires}
            error={create.error}
            hint="Optional: never expires when empty."
          />
          <ErrorNotice error={formError(create.error, ['name', 'expiresAt']) && create.error} />
          <button type="submit" className="primary" disabled={create.isPending}>
            Create token
          </button>
        </form>
      </section>
      <section aria-labelledby="tok-list">
        <h2 id="tok-list">Your tokens</h2>
        <ErrorNotice error={revoke.error} />
        <QueryState query={list} label="tokens">
          {({ tokens }) =>
            tokens.length === 0 ? (
              <Empty>No personal tokens.</Empty>
            ) : (
              <div className="table-wrap">
                <table>
                  <caption className="visually-hidden">Personal tokens</caption>
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Scopes</th>
                      <th scope="col">Prefix</th>
                      <th scope="col">Last used</th>
                      <th scope="col">Expires</th>
                      <th scope="col">Actions</th>
                    </tr>
                  </thead>
                  <tbody>
                    {tokens.map((t) => (
                      <tr key={t.id}>
                        <td>{t.name}</td>
                        <td>{t.scopes.join(', ')}</td>
                        <td className="mono">{t.prefix}</td>
                        <td>{timeAgo(t.lastUsedAt)}</td>
                        <td>{t.expiresAt ? formatDate(t.expiresAt) : 'never'}</td>
                        <td>
                          <Confirm
                            trigger={
                              <button type="button" aria-label={`Revoke ${t.name}`}>
                                Revoke
                              </button>
                            }
                            title={`Revoke ${t.name}?`}
                            description={<p>Anything using it stops working at once.</p>}
                            action="Revoke token"
                            onConfirm={() => revoke.mutateAsync({ id: t.id })}
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
    </div>
  );
}
