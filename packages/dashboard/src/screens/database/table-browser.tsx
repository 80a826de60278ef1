import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';
import { Confirm, Empty, ErrorNotice, Modal, QueryState } from '../../components/ui';
import { fieldError } from '../../lib/api-error';
import { changedCells, formatCell, primaryKeyOf } from '../../lib/cells';
import { type RouterOutputs, useTRPC } from '../../lib/trpc';

const PAGE = 50;
type Rows = RouterOutputs['databases']['rows'];

/** Tables, a page of rows at a time, and a row editor keyed by the table's primary key. */
export function TableBrowser({ serviceId }: { serviceId: string }) {
  const trpc = useTRPC();
  const tables = useQuery(trpc.databases.tables.queryOptions({ serviceId }));
  const [table, setTable] = useState<string | null>(null);
  const selectId = useId();
  return (
    <QueryState query={tables} label="tables">
      {(data) => {
        if (data.tables.length === 0) {
          return (
            <Empty>
              The database has no tables yet. Create one in the query console.{' '}
              <button type="button" onClick={() => tables.refetch()}>
                Refresh tables
              </button>
            </Empty>
          );
        }
        const current = table ?? data.tables[0]!.id;
        return (
          <div className="stack">
            <div className="row">
              <label htmlFor={selectId}>Table</label>
              <select id={selectId} value={current} onChange={(e) => setTable(e.target.value)}>
                {data.tables.map((t) => (
                  <option key={t.id} value={t.id}>
                    {t.id} ({t.rowCount} rows)
                  </option>
                ))}
              </select>
              <button type="button" onClick={() => tables.refetch()}>
                Refresh tables
              </button>
            </div>
            <RowsOfTable key={current} serviceId={serviceId} table={current} />
          </div>
        );
      }}
    </QueryState>
  );
}

function RowsOfTable({ serviceId, table }: { serviceId: string; table: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [offset, setOffset] = useState(0);
  const rows = useQuery({ ...trpc.databases.rows.queryOptions({ serviceId, table, limit: PAGE, offset }), placeholderData: (p) => p });
  const [editing, setEditing] = useState<{ row: Record<string, unknown> | null } | null>(null);
  const refresh = () =>
    queryClient.invalidateQueries({ queryKey: trpc.databases.rows.queryKey({ serviceId, table, limit: PAGE, offset }) });
  const remove = useMutation(trpc.databases.deleteRow.mutationOptions({ onSuccess: refresh }));
  return (
    <QueryState query={rows} label="rows">
      {(data) => {
        const editable = data.columns.some((c) => c.primary);
        const last = Math.min(data.offset + data.rows.length, data.total);
        return (
          <>
            <div className="spread">
              <span className="muted" role="status">
                {data.total === 0 ? 'No rows' : `Rows ${data.offset + 1}-${last} of ${data.total}`}
              </span>
              <div className="row">
                <button type="button" onClick={() => setOffset(Math.max(0, offset - PAGE))} disabled={offset === 0}>
                  Previous page
                </button>
                <button type="button" onClick={() => setOffset(offset + PAGE)} disabled={last >= data.total}>
                  Next page
                </button>
                <button type="button" className="primary" onClick={() => setEditing({ row: null })}>
                  Insert row
                </button>
              </div>
            </div>
            {!editable ? (
              <p className="muted">This table has no primary key: rows can be inserted but not edited or deleted here.</p>
            ) : null}
            <div className="table-wrap">
              <table>
                <caption className="visually-hidden">Rows of {table}</caption>
                <thead>
                  <tr>
                    {data.columns.map((c) => (
                      <th key={c.name} scope="col">
                        {c.name} <span className="muted">{c.type}</span>
                        {c.primary ? <span className="visually-hidden"> (primary key)</span> : null}
                      </th>
                    ))}
                    {editable ? <th scope="col">Actions</th> : null}
                  </tr>
                </thead>
                <tbody>
                  {data.rows.map((row, i) => {
                    const key = primaryKeyOf(data.columns, row);
                    const name = key ? Object.values(key).map(formatCell).join(', ') : String(i);
                    return (
                      // biome-ignore lint/suspicious/noArrayIndexKey: rows of one page, in order
                      <tr key={i}>
                        {data.columns.map((c) => (
                          <td key={c.name} className="cell" title={formatCell(row[c.name])}>
                            {formatCell(row[c.name])}
                          </td>
                        ))}
                        {key ? (
                          <td>
                            <div className="row">
                              <button type="button" aria-label={`Edit row ${name}`} onClick={() => setEditing({ row })}>
                                Edit
                              </button>
                              <Confirm
                                trigger={
                                  <button type="button" aria-label={`Delete row ${name}`}>
                                    Delete
                                  </button>
                                }
                                title={`Delete row ${name}?`}
                                description={<p>The row is deleted from {table} at once.</p>}
                                action="Delete row"
                                onConfirm={() => remove.mutateAsync({ serviceId, table, primaryKey: key })}
                              />
                            </div>
                          </td>
                        ) : null}
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
            {editing ? (
              <RowEditor
                serviceId={serviceId}
                table={table}
                data={data}
                row={editing.row}
                onClose={() => setEditing(null)}
                onSaved={refresh}
              />
            ) : null}
          </>
        );
      }}
    </QueryState>
  );
}

function RowEditor(props: {
  serviceId: string;
  table: string;
  data: Rows;
  row: Record<string, unknown> | null;
  onClose: () => void;
  onSaved: () => unknown;
}) {
  const trpc = useTRPC();
  const { columns } = props.data;
  const [values, setValues] = useState<Record<string, string>>(() =>
    Object.fromEntries(columns.map((c) => [c.name, props.row ? formatCell(props.row[c.name]) : ''])),
  );
  const done = async () => {
    await props.onSaved();
    props.onClose();
  };
  const insert = useMutation(trpc.databases.insertRow.mutationOptions({ onSuccess: done }));
  const update = useMutation(trpc.databases.updateRow.mutationOptions({ onSuccess: done }));
  const error = insert.error ?? update.error;
  const baseId = useId();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (props.row) {
      const key = primaryKeyOf(columns, props.row);
      if (!key) return;
      update.mutate({ serviceId: props.serviceId, table: props.table, primaryKey: key, values: changedCells(columns, props.row, values) });
    } else {
      // Cells left empty are left to the column's default.
      const filled = Object.fromEntries(Object.entries(values).filter(([, v]) => v !== ''));
      insert.mutate({ serviceId: props.serviceId, table: props.table, values: changedCells(columns, {}, filled) });
    }
  };
  return (
    <Modal
      open
      onOpenChange={(o) => (o ? null : props.onClose())}
      title={props.row ? `Edit row of ${props.table}` : `Insert row into ${props.table}`}
    >
      <form onSubmit={submit} noValidate>
        {columns.map((c, i) => {
          const id = `${baseId}-${i}`;
          const message = fieldError(error, `values.${c.name}`);
          return (
            <div className="field" key={c.name}>
              <label htmlFor={id}>
                {c.name}{' '}
                <span className="muted">
                  ({c.type}
                  {c.primary ? ', primary key' : ''})
                </span>
              </label>
              <input
                id={id}
                value={values[c.name] ?? ''}
                onChange={(e) => setValues((v) => ({ ...v, [c.name]: e.target.value }))}
                aria-invalid={message ? true : undefined}
                className="mono"
              />
              {message ? <span className="error">{message}</span> : null}
            </div>
          );
        })}
        <p className="muted">Type NULL for a null value; empty cells of an inserted row take the column's default.</p>
        <ErrorNotice error={error} />
        <div className="row end">
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" className="primary" disabled={insert.isPending || update.isPending}>
            {props.row ? 'Save row' : 'Insert row'}
          </button>
        </div>
      </form>
    </Modal>
  );
}
