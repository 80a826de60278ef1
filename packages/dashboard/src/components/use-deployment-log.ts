import { skipToken } from '@tanstack/react-query';
import { useSubscription } from '@trpc/tanstack-react-query';
import { useEffect, useState } from 'react';
import { stripAnsi } from '../lib/log-search';
import { useTRPC, useTRPCClient } from '../lib/trpc';
import { type LogLine, useLineBuffer } from './log-view';

/** Lines per read of a log's history: one answer of 100,000 lines took seconds to encode, send and decode, and froze the page meanwhile. */
export const LOG_PAGE = 5_000;

const clean = (l: LogLine): LogLine => ({ id: l.id, line: stripAnsi(l.line), stream: l.stream });

/**
 * A deployment's build log: what is written so far read in pages (shown as each arrives, the count as
 * progress), then the live stream resumed after the last line read, so the stream's snapshot holds only
 * what came since. The server ends the stream once the deployment has finished.
 */
export function useDeploymentLog(deploymentId: string) {
  const trpc = useTRPC();
  const client = useTRPCClient();
  const log = useLineBuffer();
  const [history, setHistory] = useState<{ read: number; lastId: number | null; error: unknown }>({
    read: 0,
    lastId: null,
    error: null,
  });
  // The stream's state is `idle` before it starts as after it ends: only a stream that started can have ended.
  const [started, setStarted] = useState(false);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the buffer and client are stable; a new deployment starts over
  useEffect(() => {
    const abort = new AbortController();
    log.reset([]);
    setStarted(false);
    setHistory({ read: 0, lastId: null, error: null });
    (async () => {
      let afterId = 0;
      let read = 0;
      for (;;) {
        const { logs } = await client.deployments.logs.query({ deploymentId, afterId, limit: LOG_PAGE }, { signal: abort.signal });
        if (abort.signal.aborted) return;
        log.append(logs.map(clean));
        read += logs.length;
        if (logs.length > 0) afterId = logs[logs.length - 1]!.id;
        if (logs.length < LOG_PAGE) break;
        setHistory({ read, lastId: null, error: null });
      }
      setHistory({ read, lastId: afterId, error: null });
    })().catch((error: unknown) => {
      if (!abort.signal.aborted) setHistory((h) => ({ ...h, error }));
    });
    return () => abort.abort();
  }, [deploymentId]);

  const stream = useSubscription(
    trpc.deployments.stream.subscriptionOptions(
      history.lastId === null ? skipToken : { deploymentId, lastEventId: String(history.lastId) },
      {
        onStarted: () => setStarted(true),
        onData: (event) => {
          // Log lines and the snapshot come tracked (`{id, data}`: the stream resumes after the last id); pings bare.
          if (!('data' in event)) return;
          const data = event.data;
          log.append(data.type === 'snapshot' ? data.lines.map(clean) : [clean(data.line)]);
        },
      },
    ),
  );
  return {
    lines: log.lines,
    version: log.version,
    /** Still reading what was written before the page opened. */
    loading: history.lastId === null && !history.error,
    read: history.read,
    error: history.error ?? stream.error,
    /** The server ended the stream: the deployment has finished and every line was sent. */
    ended: started && stream.status === 'idle',
  };
}
