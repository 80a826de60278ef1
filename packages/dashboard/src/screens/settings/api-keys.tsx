import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';
import { SecretOnce } from '../../components/secret-once';
import { Confirm, Empty, ErrorNotice, Field, QueryState } from '../../components/ui';
import { formError } from '../../lib/api-error';
import { timeAgo } from '../../lib/format';
import { useTRPC } from '../../lib/trpc';

/** The installation's API keys: made (shown once) with an access level and the projects they see, listed, revoked. */
export default function ApiKeys() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const list = useQuery(trpc.apiKeys.list.queryOptions());
  const projects = useQuery(trpc.projects.list.queryOptions());
  const [name, setName] = useState('');
  const [access, setAccess] = useState<'read' | 'write'>('read');
  const [projectIds, setProjectIds] = useState<string[]>([]);
  const [created, setCreated] = useState<string | null>(null);
  const accessId = useId();
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.apiKeys.list.queryKey() });
  const create = useMutation(
    trpc.apiKeys.create.mutationOptions({
      onSuccess: async ({ token }) => {
        setCreated(token);
        setName('');
        await refresh();
      },
    }),
  );
  const remove = useMutation(trpc.apiKeys.delete.mutationOptions({ onSuccess: refresh }));
  const projectName = new Map((projects.data?.projects ?? []).map((p) => [p.id, p.name]));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate({ name: name.trim(), access, projectIds: projectIds.length ? projectIds : null });
  };
  return (
    <div className="stack">
      <section className="card" aria-labelledby="key-new">
        <h2 id="key-new">Create an API key</h2>
        {created ? <SecretOnce label="The new API key" value={created} onDone={() => setCreated(null)} /> : null}
        <form onSubmit={submit} noValidate>
          <Field label="Key name" name="name" value={name} onChange={setName} error={create.error} placeholder="ci" />
          <div className="field">
            <label htmlFor={accessId}>Access</label>
            <select id={accessId} value={access} onChange={(e) => setAccess(e.target.value as 'read' | 'write')}>
              <option value="read">read</option>
              <option value="write">write</option>
            </select>
          </div>
          <fieldset className="field">
            <legend>
              <strong>Projects</strong> <span className="muted">(none checked: all projects)</span>
            </legend>
            {(projects.data?.projects ?? []).map((p) => (
              <label key={p.id} className="check">
                <input
                  type="checkbox"
                  checked={projectIds.includes(p.id)}
                  onChange={(e) => setProjectIds((prev) => (e.target.checked ? [...prev, p.id] : prev.filter((x) => x !== p.id)))}
                />{' '}
                {p.name}
              </label>
            ))}
          </fieldset>
          <ErrorNotice error={formError(create.error, ['name']) && create.error} />
          <button type="submit" className="primary" disabled={create.isPending}>
            Create API key
          </button>
        </form>
      </section>
      <section aria-labelledby="key-list">
        <h2 id="key-list">API keys</h2>
        <ErrorNotice error={remove.error} />
        <QueryState query={list} label="API keys">
          {({ apiKeys }) =>
            apiKeys.length === 0 ? (
              <Empty>No API keys.</Empty>
            ) : (
              <div className="table-wrap">
                <table>
                  <caption className="visually-hidden">API keys</caption>
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Access</th>
                      <th scope="col">Projects</th>
                      <th scope="col">Prefix</th>
                      <th scope="col">Last used</th>
                      <th scope="col">Actions</th>
                    </tr>
                  </thead>
                  <tbody>
                    {apiKeys.map((k) => (
                      <tr key={k.id}>
                        <td>{k.name}</td>
                        <td>{k.access}</td>
                        <td>{k.projectIds ? k.projectIds.map((id) => projectName.get(id) ?? id).join(', ') : 'all'}</td>
                        <td className="mono">{k.prefix}</td>
                        <td>{timeAgo(k.lastUsedAt)}</td>
                        <td>
                          <Confirm
                            trigger={
                              <button type="button" aria-label={`Revoke ${k.name}`}>
                                Revoke
                              </button>
                            }
                            title={`Revoke ${k.name}?`}
                            description={<p>Anything using it stops working at once.</p>}
                            action="Revoke key"
                            onConfirm={() => remove.mutateAsync({ id: k.id })}
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
