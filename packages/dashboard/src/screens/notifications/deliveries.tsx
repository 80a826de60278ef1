import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { useLivePoll } from '../../components/live-updates';
import { PagedTable } from '../../components/paged-table';
import { QueryState, StatusBadge } from '../../components/ui';
import { useCursorPages } from '../../lib/cursor-pages';
import { formatDate } from '../../lib/format';
import { useTRPC } from '../../lib/trpc';

const PAGE = 50;

/** Every delivery to a channel (signed webhooks included), newest first, each attempt with its status, latency and error. */
export default function Deliveries() {
  const trpc = useTRPC();
  const channels = useQuery(trpc.notifications.channels.list.queryOptions());
  const [channelId, setChannelId] = useState('');
  const pages = useCursorPages();
  const every = useLivePoll(10_000);
  const list = useQuery({
    ...trpc.notifications.deliveries.queryOptions({
      limit: PAGE,
      ...(channelId ? { channelId } : {}),
      ...(pages.cursor ? { cursor: pages.cursor } : {}),
    }),
    placeholderData: keepPreviousData,
    refetchInterval: every,
  });
  const filterId = useId();
  const channelName = new Map((channels.data?.channels ?? []).map((c) => [c.id, c.name]));
  return (
    <div className="stack">
      <div className="field">
        <label htmlFor={filterId}>Channel</label>
        <select
          id={filterId}
          value={channelId}
          onChange={(e) => {
            setChannelId(e.target.value);
            pages.reset();
          }}
        >
          <option value="">All channels</option>
          {(channels.data?.channels ?? []).map((c) => (
            <option key={c.id} value={c.id}>
              {c.name}
            </option>
          ))}
        </select>
      </div>
      <QueryState query={list} label="deliveries">
        {({ deliveries, nextCursor }) => (
          <>
            <PagedTable
              label="Deliveries"
              columns={['Created', 'Channel', 'Event', 'Status', 'Attempts']}
              count={deliveries.length}
              empty="Nothing delivered yet: a channel’s test or an event a rule routes shows here."
              emptyPastFirst="No more deliveries."
              page={pages.page}
              onPrevious={pages.previous}
              onNext={nextCursor ? () => pages.next(nextCursor) : undefined}
            >
              {deliveries.map((d) => (
                <tr key={d.id}>
                  <td>{formatDate(d.createdAt)}</td>
                  <td>{channelName.get(d.channelId) ?? d.channelId}</td>
                  <td className="mono">{d.eventType}</td>
                  <td>
                    <StatusBadge status={d.status} />
                    {d.nextAttemptAt && d.status !== 'succeeded' ? (
                      <div className="muted">next try {formatDate(d.nextAttemptAt)}</div>
                    ) : null}
                  </td>
                  <td>
                    {d.attempts.length === 0 ? (
                      <span className="muted">none yet</span>
                    ) : (
                      <details>
                        <summary>
                          {d.attempts.length} {d.attempts.length === 1 ? 'attempt' : 'attempts'}
                          {d.lastError ? `: ${d.lastError}` : ''}
                        </summary>
                        <ol className="attempts">
                          {d.attempts.map((a) => (
                            <li key={a.attempt}>
                              {formatDate(a.at)}: {a.ok ? 'delivered' : 'failed'}
                              {a.statusCode ? `, HTTP ${a.statusCode}` : ''}, {a.latencyMs} ms{a.error ? `, ${a.error}` : ''}
                            </li>
                          ))}
                        </ol>
                      </details>
                    )}
                  </td>
                </tr>
              ))}
            </PagedTable>
          </>
        )}
      </QueryState>
    </div>
  );
}
