import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';
import { Link } from 'react-router';
import { useLivePoll } from '../../components/live-updates';
import { CopyButton, Empty, ErrorNotice, Field, Modal, PageTitle, QueryState, StatusBadge } from '../../components/ui';
import { fieldError, formError } from '../../lib/api-error';
import { formatDate } from '../../lib/format';
import { parseLabels } from '../../lib/labels';
import { type RouterOutputs, useTRPC } from '../../lib/trpc';

type Join = RouterOutputs['servers']['create']['join'];
export type Server = RouterOutputs['servers']['list']['servers'][number];

/** The servers: the host running the platform first, then those added; adding one shows its join command once. */
export default function ServerList() {
  const trpc = useTRPC();
  const every = useLivePoll(10_000);
  const list = useQuery({ ...trpc.servers.list.queryOptions(), refetchInterval: every });
  const [adding, setAdding] = useState(false);
  const [join, setJoin] = useState<{ name: string; join: Join } | null>(null);
  return (
    <div className="stack">
      <PageTitle
        actions={
          <button type="button" className="primary" onClick={() => setAdding(true)}>
            Add server
          </button>
        }
      >
        Servers
      </PageTitle>
      {join ? <JoinCommand name={join.name} join={join.join} onDone={() => setJoin(null)} /> : null}
      <QueryState query={list} label="servers">
        {({ servers }) =>
          servers.length === 0 ? (
            <Empty>No server is recorded yet: the platform records its own host when it starts.</Empty>
          ) : (
            // biome-ignore lint/a11y/noNoninteractiveTabindex: a table wider than a phone scrolls sideways, by keyboard too
            <section className="table-wrap" tabIndex={0} aria-label="Servers table">
              <table>
                <caption className="visually-hidden">Servers</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">State</th>
                    <th scope="col">Availability</th>
                    <th scope="col">Role</th>
                    <th scope="col">Address</th>
                    <th scope="col">CPU (reserved / total)</th>
                    <th scope="col">Memory (reserved / total)</th>
                    <th scope="col">Tasks</th>
                  </tr>
                </thead>
                <tbody>
                  {servers.map((s) => (
                    <tr key={s.id}>
                      <td>
                        <Link to={`/servers/${s.id}`}>{s.name}</Link>
                        {s.local ? <span className="muted"> (this host)</span> : null}
                      </td>
                      <td>
                        <StatusBadge status={s.state} />
                      </td>
                      <td>
                        <StatusBadge status={s.availability} />
                      </td>
                      <td>{s.role}</td>
                      <td className="mono">{s.address ?? '-'}</td>
                      <td>{s.resources ? `${round(s.resources.reservedCpus)} / ${round(s.resources.cpus)}` : '-'}</td>
                      <td>{s.resources ? `${s.resources.reservedMemoryMb} / ${s.resources.memoryMb} MB` : '-'}</td>
                      <td className="num">{s.tasks.length}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </section>
          )
        }
      </QueryState>
      <AddServer
        open={adding}
        onOpenChange={setAdding}
        onAdded={(name, j) => {
          setAdding(false);
          setJoin({ name, join: j });
        }}
      />
    </div>
  );
}

export function round(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(2);
}

function AddServer(props: { open: boolean; onOpenChange: (open: boolean) => void; onAdded: (name: string, join: Join) => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [labels, setLabels] = useState('');
  const [labelError, setLabelError] = useState<string | null>(null);
  const labelsId = useId();
  const create = useMutation(
    trpc.servers.create.mutationOptions({
      onSuccess: async ({ server, join }) => {
        setName('');
        setLabels('');
        props.onAdded(server.name, join);
        await queryClient.invalidateQueries({ queryKey: trpc.servers.list.queryKey() });
      },
    }),
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const parsed = parseLabels(labels);
    if (!parsed.ok) {
      setLabelError(parsed.message);
      return;
    }
    setLabelError(null);
    create.mutate({ name: name.trim(), ...(Object.keys(parsed.labels).length ? { labels: parsed.labels } : {}) });
  };
  const labelMessage = labelError ?? fieldError(create.error, 'labels') ?? null;
  return (
    <Modal
      open={props.open}
      onOpenChange={props.onOpenChange}
      title="Add a server"
      description="The platform answers a one-line command to run as root on the new machine; it joins the cluster with it."
    >
      <form onSubmit={submit} noValidate>
        <Field label="Server name" name="name" value={name} onChange={setName} error={create.error} placeholder="worker-1" />
        <div className="field">
          <label htmlFor={labelsId}>Labels (one key=value a line, optional)</label>
          <textarea
            id={labelsId}
            rows={3}
            value={labels}
            onChange={(e) => setLabels(e.target.value)}
            aria-invalid={labelMessage ? true : undefined}
            aria-describedby={labelMessage ? `${labelsId}-error` : undefined}
            placeholder="region=eu-1"
          />
          {labelMessage ? (
            <span id={`${labelsId}-error`} className="error">
              {labelMessage}
            </span>
          ) : null}
        </div>
        <ErrorNotice error={formError(create.error, ['name', 'labels']) && create.error} />
        <div className="row end">
          <button type="button" onClick={() => props.onOpenChange(false)}>
            Cancel
          </button>
          <button type="submit" className="primary" disabled={create.isPending}>
            Add server
          </button>
        </div>
      </form>
    </Modal>
  );
}

/** The join command: shown this once (its token is single-use and kept as a hash), with a copy button. */
function JoinCommand({ name, join, onDone }: { name: string; join: Join; onDone: () => void }) {
  return (
    <section className="alert ok" aria-labelledby="join-h">
      <h2 id="join-h">Join {name} to the cluster</h2>
      <p>
        Run this as root on the new machine before {formatDate(join.expiresAt)}. It is shown this once: copy it now. It installs the Docker
        engine where missing, then joins through <code>{join.managerAddress}</code>.
      </p>
      <pre className="secret-once" data-testid="join-command">
        {join.command}
      </pre>
      <div className="row">
        <CopyButton value={join.command} label="Copy join command" />
        <button type="button" onClick={onDone}>
          Done
        </button>
      </div>
    </section>
  );
}
