import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { ProjectSelect } from '../../components/project-select';
import { Confirm, Empty, ErrorNotice, Field, Loading, QueryState } from '../../components/ui';
import { fieldError, formError } from '../../lib/api-error';
import { useTRPC } from '../../lib/trpc';

/** Rules: which events (a type, `family.*` or `*`) of a project, or of the whole install, go to which channels. */
export default function Rules() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const rules = useQuery(trpc.notifications.rules.list.queryOptions());
  const channels = useQuery(trpc.notifications.channels.list.queryOptions());
  const projects = useQuery(trpc.projects.list.queryOptions());
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.notifications.rules.list.queryKey() });
  const create = useMutation(trpc.notifications.rules.create.mutationOptions({ onSuccess: refresh }));
  const remove = useMutation(trpc.notifications.rules.delete.mutationOptions({ onSuccess: refresh }));
  const [projectId, setProjectId] = useState('');
  const [events, setEvents] = useState('deployment.failed, service.*');
  const [channelIds, setChannelIds] = useState<string[]>([]);
  const channelName = new Map((channels.data?.channels ?? []).map((c) => [c.id, c.name]));
  const projectName = new Map((projects.data?.projects ?? []).map((p) => [p.id, p.name]));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate({
      projectId: projectId || null,
      events: events
        .split(/[,\s]+/)
        .map((s) => s.trim())
        .filter(Boolean),
      channelIds,
    });
  };
  const channelsError = fieldError(create.error, 'channelIds');
  return (
    <div className="stack">
      <section className="card" aria-labelledby="rule-new">
        <h2 id="rule-new">Add a rule</h2>
        <form onSubmit={submit} noValidate>
          <div className="grid-2">
            <ProjectSelect projects={projects} value={projectId} onChange={setProjectId} anyLabel="Every project and the install" />
            <Field
              label="Events"
              name="events"
              value={events}
              onChange={setEvents}
              error={create.error}
              hint="Event types separated by commas: deployment.failed, backup.*, or * for all"
            />
          </div>
          <fieldset className="field">
            <legend>
              <strong>Channels</strong>
            </legend>
            {channels.isPending ? (
              <Loading label="Loading channels" />
            ) : channels.error ? (
              <ErrorNotice error={channels.error} title="Could not load channels" />
            ) : (channels.data?.channels ?? []).length === 0 ? (
              <p className="muted">Add a channel first.</p>
            ) : null}
            {(channels.data?.channels ?? []).map((c) => (
              <label key={c.id} className="check">
                <input
                  type="checkbox"
                  checked={channelIds.includes(c.id)}
                  onChange={(e) => setChannelIds((prev) => (e.target.checked ? [...prev, c.id] : prev.filter((x) => x !== c.id)))}
                />{' '}
                {c.name}
              </label>
            ))}
            {channelsError ? <span className="error">{channelsError}</span> : null}
          </fieldset>
          <ErrorNotice error={formError(create.error, ['events', 'channelIds']) && create.error} />
          <button type="submit" className="primary" disabled={create.isPending}>
            Add rule
          </button>
        </form>
      </section>
      <section aria-labelledby="rule-list">
        <h2 id="rule-list">Rules</h2>
        <ErrorNotice error={remove.error} />
        <QueryState query={rules} label="rules">
          {({ rules: list }) =>
            list.length === 0 ? (
              <Empty>No rule: no event is sent anywhere yet.</Empty>
            ) : (
              <div className="table-wrap">
                <table>
                  <caption className="visually-hidden">Notification rules</caption>
                  <thead>
                    <tr>
                      <th scope="col">Project</th>
                      <th scope="col">Events</th>
                      <th scope="col">Channels</th>
                      <th scope="col">Actions</th>
                    </tr>
                  </thead>
                  <tbody>
                    {list.map((r, i) => (
                      <tr key={r.id}>
                        <td>{r.projectId ? (projectName.get(r.projectId) ?? r.projectId) : 'every project and the install'}</td>
                        <td className="mono">{r.events.join(', ')}</td>
                        <td>{r.channelIds.map((id) => channelName.get(id) ?? id).join(', ')}</td>
                        <td>
                          <Confirm
                            trigger={
                              <button type="button" aria-label={`Delete rule ${i + 1}`}>
                                Delete
                              </button>
                            }
                            title="Delete this rule?"
                            description={<p>Its events stop going to its channels.</p>}
                            action="Delete rule"
                            onConfirm={() => remove.mutateAsync({ id: r.id })}
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
