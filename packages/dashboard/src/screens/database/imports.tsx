import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Empty, ErrorNotice, Field, QueryState, StatusBadge } from '../../components/ui';
import { formError } from '../../lib/api-error';
import { formatDate } from '../../lib/format';
import { useTRPC } from '../../lib/trpc';

/** Imports of data from another server by URL (PostgreSQL-compatible and Redis engines). */
export function Imports({ serviceId, engine }: { serviceId: string; engine: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const list = useQuery({
    ...trpc.databaseImports.list.queryOptions({ serviceId }),
    refetchInterval: (q) => (q.state.data?.imports.some((i) => i.status === 'running') ? 2_000 : false),
  });
  const [sourceUrl, setSourceUrl] = useState('');
  const done = () => {
    setSourceUrl('');
    return queryClient.invalidateQueries({ queryKey: trpc.databaseImports.list.queryKey({ serviceId }) });
  };
  const postgres = useMutation(trpc.databaseImports.postgresUrl.mutationOptions({ onSuccess: done }));
  const redis = useMutation(trpc.databaseImports.redisUrl.mutationOptions({ onSuccess: done }));
  const isRedis = engine === 'redis';
  const supported = isRedis || engine === 'postgres' || engine === 'timescale';
  const mutation = isRedis ? redis : postgres;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    mutation.mutate({ serviceId, sourceUrl: sourceUrl.trim() });
  };
  return (
    <div className="stack">
      {supported ? (
        <form onSubmit={submit} noValidate className="card">
          <Field
            label="Source URL"
            name="sourceUrl"
            type="password"
            value={sourceUrl}
            onChange={setSourceUrl}
            error={mutation.error}
            placeholder={isRedis ? 'redis://:password@host:6379/0' : 'postgres://user:password@host:5432/db'}
            hint="Its credentials are used for the import only, never stored in clear or shown."
          />
          <ErrorNotice error={formError(mutation.error, ['sourceUrl']) && mutation.error} />
          <button type="submit" className="primary" disabled={mutation.isPending || !sourceUrl.trim()}>
            Import
          </button>
        </form>
      ) : (
        <p className="muted">Imports by URL are offered for PostgreSQL, TimescaleDB and Redis.</p>
      )}
      <QueryState query={list} label="imports">
        {({ imports }) =>
          imports.length === 0 ? (
            <Empty>No imports yet.</Empty>
          ) : (
            <ul className="list">
              {imports.map((i) => (
                <li key={i.id}>
                  <span>
                    {i.sourceLabel} <span className="muted">{formatDate(i.createdAt)}</span>
                  </span>
                  <StatusBadge status={i.status} label="Import status" />
                </li>
              ))}
            </ul>
          )
        }
      </QueryState>
    </div>
  );
}
