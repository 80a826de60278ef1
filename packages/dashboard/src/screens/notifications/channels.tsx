import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';
import { SecretOnce } from '../../components/secret-once';
import { Confirm, Empty, ErrorNotice, Field, Modal, QueryState, StatusBadge } from '../../components/ui';
import { formError } from '../../lib/api-error';
import {
  CHANNEL_FIELDS,
  CHANNEL_LABELS,
  CHANNEL_TYPES,
  type ChannelType,
  configFrom,
  describeConfig,
  valuesFrom,
} from '../../lib/channel-config';
import { timeAgo } from '../../lib/format';
import { type RouterOutputs, useTRPC } from '../../lib/trpc';

type Channel = RouterOutputs['notifications']['channels']['list']['channels'][number];
type TestResult = RouterOutputs['notifications']['channels']['test']['test'];

/** Notification channels: added (a webhook's signing secret shown once), changed, tested now, removed. */
export default function Channels() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const list = useQuery(trpc.notifications.channels.list.queryOptions());
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.notifications.channels.list.queryKey() });
  const [secret, setSecret] = useState<string | null>(null);
  const [editing, setEditing] = useState<Channel | null>(null);
  const [tested, setTested] = useState<{ name: string; result: TestResult } | null>(null);
  const test = useMutation(trpc.notifications.channels.test.mutationOptions({ onSettled: refresh }));
  const remove = useMutation(trpc.notifications.channels.delete.mutationOptions({ onSuccess: refresh }));
  return (
    <div className="stack">
      <section className="card" aria-labelledby="ch-new">
        <h2 id="ch-new">Add a channel</h2>
        {secret ? <SecretOnce label="The webhook's signing secret" value={secret} onDone={() => setSecret(null)} /> : null}
        <ChannelForm
          mode="create"
          onSaved={async (s) => {
            setSecret(s);
            await refresh();
          }}
        />
      </section>
      <section aria-labelledby="ch-list">
        <h2 id="ch-list">Channels</h2>
        {tested ? (
          <p className={`alert ${tested.result.ok ? 'ok' : ''}`} role="status">
            Test to {tested.name}: {tested.result.ok ? 'delivered' : 'not delivered'}
            {tested.result.statusCode ? ` (HTTP ${tested.result.statusCode})` : ''} in {tested.result.latencyMs} ms
            {tested.result.error ? `: ${tested.result.error}` : '.'}
          </p>
        ) : null}
        <ErrorNotice error={test.error ?? remove.error} />
        <QueryState query={list} label="channels">
          {({ channels }) =>
            channels.length === 0 ? (
              <Empty>No channel yet: add one above, then a rule to send it events.</Empty>
            ) : (
              <div className="table-wrap">
                <table>
                  <caption className="visually-hidden">Notification channels</caption>
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Type</th>
                      <th scope="col">Target</th>
                      <th scope="col">State</th>
                      <th scope="col">Last attempt</th>
                      <th scope="col">Actions</th>
                    </tr>
                  </thead>
                  <tbody>
                    {channels.map((c) => (
                      <tr key={c.id}>
                        <td>{c.name}</td>
                        <td>{CHANNEL_LABELS[c.type]}</td>
                        <td className="mono">{describeConfig(c.config)}</td>
                        <td>
                          <StatusBadge status={c.state} />
                          {c.lastError ? <div className="error-text">{c.lastError}</div> : null}
                        </td>
                        <td>{timeAgo(c.lastAttemptAt)}</td>
                        <td>
                          <div className="row">
                            <button
                              type="button"
                              aria-label={`Send test to ${c.name}`}
                              disabled={test.isPending}
                              onClick={async () => {
                                setTested(null);
                                const { test: result } = await test.mutateAsync({ id: c.id });
                                setTested({ name: c.name, result });
                              }}
                            >
                              Send test
                            </button>
                            <button type="button" aria-label={`Edit ${c.name}`} onClick={() => setEditing(c)}>
                              Edit
                            </button>
                            <Confirm
                              trigger={
                                <button type="button" aria-label={`Delete ${c.name}`}>
                                  Delete
                                </button>
                              }
                              title={`Delete ${c.name}?`}
                              description={<p>It is removed from every rule; its deliveries stay in the log.</p>}
                              action="Delete channel"
                              onConfirm={() => remove.mutateAsync({ id: c.id })}
                            />
                          </div>
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
      <Modal open={!!editing} onOpenChange={(open) => !open && setEditing(null)} title={`Edit ${editing?.name ?? 'channel'}`}>
        {editing ? (
          <ChannelForm
            mode="edit"
            channel={editing}
            onSaved={async () => {
              setEditing(null);
              await refresh();
            }}
          />
        ) : null}
      </Modal>
    </div>
  );
}

function ChannelForm(
  props: { mode: 'create'; onSaved: (secret: string | null) => unknown } | { mode: 'edit'; channel: Channel; onSaved: () => unknown },
) {
  const trpc = useTRPC();
  const editing = props.mode === 'edit' ? props.channel : null;
  const [type, setType] = useState<ChannelType>(editing?.type ?? 'webhook');
  const [name, setName] = useState(editing?.name ?? '');
  const [values, setValues] = useState<Record<string, string>>(() => (editing ? valuesFrom(editing.type, editing.config) : {}));
  const typeId = useId();
  const create = useMutation(trpc.notifications.channels.create.mutationOptions());
  const update = useMutation(trpc.notifications.channels.update.mutationOptions());
  const error = editing ? update.error : create.error;
  const fields = CHANNEL_FIELDS[type];
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const config = configFrom(type, values);
    try {
      if (props.mode === 'edit') {
        await update.mutateAsync({ id: props.channel.id, name: name.trim(), config });
        await props.onSaved();
      } else {
        const { secret } = await create.mutateAsync({ type, name: name.trim(), config });
        setName('');
        setValues({});
        await props.onSaved(secret);
      }
    } catch {
      // shown beside its field, or above the button
    }
  };
  return (
    <form onSubmit={submit} noValidate>
      <div className="grid-2">
        {editing ? null : (
          <div className="field">
            <label htmlFor={typeId}>Channel type</label>
            <select id={typeId} value={type} onChange={(e) => setType(e.target.value as ChannelType)}>
              {CHANNEL_TYPES.map((t) => (
                <option key={t} value={t}>
                  {CHANNEL_LABELS[t]}
                </option>
              ))}
            </select>
          </div>
        )}
        <Field label="Channel name" name="name" value={name} onChange={setName} error={error} placeholder="ops alerts" />
        {fields.map((f) => (
          <Field
            key={`${type}-${f.key}`}
            label={f.label + (f.optional ? ' (optional)' : '')}
            name={`config.${f.key}`}
            type={f.kind === 'url' ? 'url' : 'text'}
            inputMode={f.kind === 'number' ? 'numeric' : undefined}
            value={values[f.key] ?? ''}
            onChange={(v) => setValues((prev) => ({ ...prev, [f.key]: v }))}
            error={error}
            autoComplete="off"
            hint={editing && f.secret ? 'Stored and masked: leave blank to keep it' : f.hint}
          />
        ))}
      </div>
      <ErrorNotice error={formError(error, ['name', 'config']) && error} />
      <button type="submit" className="primary" disabled={create.isPending || update.isPending}>
        {editing ? 'Save channel' : 'Add channel'}
      </button>
    </form>
  );
}
