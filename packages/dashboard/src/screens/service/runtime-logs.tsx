import { useSubscription } from '@trpc/tanstack-react-query';
import { useState } from 'react';
import { LogView, useLineBuffer } from '../../components/log-view';
import { ErrorNotice } from '../../components/ui';
import { stripAnsi } from '../../lib/log-search';
import { useTRPC } from '../../lib/trpc';
import { useServiceOverview } from './use-service';

/** The running container's output, live. */
export default function RuntimeLogs() {
  const { serviceId } = useServiceOverview();
  const trpc = useTRPC();
  const log = useLineBuffer();
  const [closed, setClosed] = useState(false);
  const stream = useSubscription(
    trpc.deployments.runtimeLogs.subscriptionOptions(
      { serviceId, tail: 1000 },
      {
        onData: (event) => {
          const data = 'data' in event ? event.data : event;
          // A resumed stream's snapshot holds what came after the last line shown: appended, not replacing.
          if (data.type === 'snapshot') log.append(data.lines.map((l) => ({ ...l, line: stripAnsi(l.line) })));
          else if (data.type === 'log') log.append([{ ...data.line, line: stripAnsi(data.line.line) }]);
          else if (data.type === 'status') setClosed(data.closed);
        },
      },
    ),
  );
  return (
    <div className="stack">
      <h2>Runtime logs</h2>
      {stream.error ? <ErrorNotice error={stream.error} title="The log stream stopped" /> : null}
      {closed ? <p className="muted">No container is running; the log below is what it wrote last.</p> : null}
      <LogView lines={log.lines} version={log.version} label="Runtime log" live={!closed && stream.status === 'pending'} />
    </div>
  );
}
