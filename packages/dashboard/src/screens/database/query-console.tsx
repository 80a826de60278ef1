import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';
import { ErrorNotice } from '../../components/ui';
import { fieldError } from '../../lib/api-error';
import { formatCell } from '../../lib/cells';
import { useTRPC } from '../../lib/trpc';

const PROMPTS: Record<string, { label: string; placeholder: string }> = {
  redis: { label: 'Command', placeholder: 'GET my-key' },
  mongodb: { label: 'Command (JSON)', placeholder: '{"find": "orders", "limit": 10}' },
};

/** One statement at a time (one command line for Redis, one JSON command for MongoDB), results in a grid. */
export function QueryConsole({ serviceId, engine }: { serviceId: string; engine: string }) {
  const trpc = useTRPC();
  const [sql, setSql] = useState('');
  const queryClient = useQueryClient();
  // A statement may create, fill or drop tables: the table browser reads them again.
  const query = useMutation(
    trpc.databases.query.mutationOptions({
      onSuccess: () =>
        Promise.all([
          queryClient.invalidateQueries({ queryKey: trpc.databases.tables.queryKey({ serviceId }) }),
          queryClient.invalidateQueries({ queryKey: trpc.databases.rows.pathKey() }),
        ]),
    }),
  );
  const id = useId();
  const prompt = PROMPTS[engine] ?? { label: 'SQL', placeholder: 'select now()' };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    query.mutate({ serviceId, sql });
  };
  const message = fieldError(query.error, 'sql');
  const result = query.data;
  return (
    <div className="stack">
      <form onSubmit={submit} noValidate>
        <div className="field">
          <label htmlFor={id}>{prompt.label}</label>
          <textarea
            id={id}
            rows={5}
            value={sql}
            placeholder={prompt.placeholder}
            onChange={(e) => setSql(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) submit(e);
            }}
            aria-invalid={message ? true : undefined}
            aria-describedby={`${id}-hint`}
          />
          <span id={`${id}-hint`} className="hint">
            Ctrl+Enter runs it.
          </span>
          {message ? <span className="error">{message}</span> : null}
        </div>
        <button type="submit" className="primary" disabled={query.isPending || !sql.trim()}>
          {query.isPending ? <span className="spinner" aria-hidden="true" /> : null}
          Run query
        </button>
      </form>
      {!message ? <ErrorNotice error={query.error} title="The query failed" /> : null}
      {result ? (
        <section aria-label="Query result">
          <p role="status" className="muted">
            {result.rowCount} row{result.rowCount === 1 ? '' : 's'}
            {result.rows.length < result.rowCount ? ` (first ${result.rows.length} shown)` : ''}
          </p>
          {result.columns.length > 0 ? (
            <div className="table-wrap">
              <table>
                <caption className="visually-hidden">Query result</caption>
                <thead>
                  <tr>
                    {result.columns.map((c) => (
                      <th key={c.name} scope="col">
                        {c.name} <span className="muted">{c.type}</span>
                      </th>
                    ))}
                  </tr>
                </thead>
                <tbody>
                  {result.rows.map((row, i) => (
                    // biome-ignore lint/suspicious/noArrayIndexKey: result rows, in order
                    <tr key={i}>
                      {result.columns.map((c) => (
                        <td key={c.name} className="cell">
                          {formatCell(row[c.name])}
                        </td>
                      ))}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          ) : null}
        </section>
      ) : null}
    </div>
  );
}
