import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Confirm, Empty, ErrorNotice, Field, QueryState } from '../../components/ui';
import { formError } from '../../lib/api-error';
import { formatDate } from '../../lib/format';
import { useTRPC } from '../../lib/trpc';

/**
 * Scheduled backups of a database (the general API's backup configurations): a cron schedule in UTC and
 * how many backups to keep; each can run at once. The daily/weekly/monthly switches are configurations
 * too, marked as such.
 */
export function BackupSchedules({ serviceId, onTriggered }: { serviceId: string; onTriggered: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const list = useQuery(trpc.backupConfigurations.list.queryOptions({ serviceId }));
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.backupConfigurations.list.queryKey({ serviceId }) });
  const [schedule, setSchedule] = useState('0 3 * * *');
  const [keep, setKeep] = useState('7');
  const create = useMutation(trpc.backupConfigurations.create.mutationOptions({ onSuccess: refresh }));
  const trigger = useMutation(
    trpc.backupConfigurations.trigger.mutationOptions({
      onSuccess: () => {
        onTriggered();
        return refresh();
      },
    }),
  );
  const remove = useMutation(trpc.backupConfigurations.delete.mutationOptions({ onSuccess: refresh }));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const count = keep.trim() === '' ? undefined : Number(keep);
    create.mutate(
      { serviceId, schedule: schedule.trim(), retention: count === undefined ? undefined : { count } },
      { onSuccess: () => setSchedule('0 3 * * *') },
    );
  };
  return (
    <section className="stack" aria-labelledby="schedules-h">
      <h3 id="schedules-h">Scheduled backups</h3>
      <form className="inline" onSubmit={submit} noValidate>
        <Field
          label="Schedule (cron, UTC)"
          name="schedule"
          value={schedule}
          onChange={setSchedule}
          error={create.error}
          hint="minute hour day month weekday, e.g. 0 3 * * * for 03:00 every day"
        />
        <Field label="Backups to keep" name="retention.count" value={keep} onChange={setKeep} error={create.error} inputMode="numeric" />
        <button type="submit" disabled={create.isPending}>
          {create.isPending ? <span className="spinner" aria-hidden="true" /> : null}
          Add schedule
        </button>
      </form>
      <ErrorNotice error={formError(create.error, ['schedule', 'retention.count', 'count']) && create.error} />
      <ErrorNotice error={trigger.error ?? remove.error} />
      <QueryState query={list} label="backup schedules">
        {({ configurations }) =>
          configurations.length === 0 ? (
            <Empty>No scheduled backups.</Empty>
          ) : (
            <div className="table-wrap">
              <table>
                <caption className="visually-hidden">Scheduled backups</caption>
                <thead>
                  <tr>
                    <th scope="col">Schedule</th>
                    <th scope="col">Keeps</th>
                    <th scope="col">Next run</th>
                    <th scope="col">Last run</th>
                    <th scope="col">Actions</th>
                  </tr>
                </thead>
                <tbody>
                  {configurations.map((c) => (
                    <tr key={c.id}>
                      <td>
                        <code>{c.schedule}</code> {c.managed ? <span className="muted">({c.managed})</span> : null}
                        {c.lastError ? <div className="error-text">{c.lastError}</div> : null}
                      </td>
                      <td>
                        {[
                          c.retention.count !== null ? `${c.retention.count} backups` : null,
                          c.retention.maxAgeDays !== null ? `${c.retention.maxAgeDays} days` : null,
                        ]
                          .filter(Boolean)
                          .join(', ') || 'all'}
                      </td>
                      <td>{formatDate(c.nextRunAt)}</td>
                      <td>{c.lastRunAt ? formatDate(c.lastRunAt) : 'never'}</td>
                      <td>
                        <div className="row">
                          <button
                            type="button"
                            aria-label={`Back up now with schedule ${c.schedule}`}
                            onClick={() => trigger.mutate({ configurationId: c.id })}
                            disabled={trigger.isPending}
                          >
                            Back up now
                          </button>
                          {c.managed ? null : (
                            <Confirm
                              trigger={
                                <button type="button" aria-label={`Delete schedule ${c.schedule}`}>
                                  Delete
                                </button>
                              }
                              title="Delete this schedule?"
                              description={<p>No more backups are made on it; the backups it made stay.</p>}
                              action="Delete schedule"
                              onConfirm={() => remove.mutateAsync({ configurationId: c.id })}
                            />
                          )}
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
  );
}
