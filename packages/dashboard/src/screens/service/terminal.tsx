import { useMutation } from '@tanstack/react-query';
import { FitAddon } from '@xterm/addon-fit';
import { Terminal as XTerm } from '@xterm/xterm';
import '@xterm/xterm/css/xterm.css';
import { useEffect, useRef, useState } from 'react';
import { ErrorNotice } from '../../components/ui';
import { useTRPC } from '../../lib/trpc';
import { useServiceOverview } from './use-service';

type State = { kind: 'idle' } | { kind: 'connecting' } | { kind: 'open' } | { kind: 'closed'; reason: string };

/**
 * A shell in the service's running container: a one-time ticket from the API (the page's session asks
 * for it), then the WebSocket with the ticket. xterm.js in screen-reader mode keeps the screen's text
 * in the DOM for assistive technology; the host resizes (drag its corner) and the shell follows.
 */
export default function Terminal() {
  const { serviceId } = useServiceOverview();
  const trpc = useTRPC();
  const host = useRef<HTMLDivElement>(null);
  const session = useRef<{ term: XTerm; socket: WebSocket | null; fit: FitAddon } | null>(null);
  const [state, setState] = useState<State>({ kind: 'idle' });
  const ticket = useMutation(trpc.terminals.createTicket.mutationOptions());
  const target = `/api/ws/services/${serviceId}/terminal`;

  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const term = new XTerm({
      screenReaderMode: true,
      cursorBlink: true,
      convertEol: false,
      fontFamily: 'ui-monospace, "DejaVu Sans Mono", Menlo, monospace',
      fontSize: 14,
      theme: { background: '#0d1117', foreground: '#e6edf3' },
    });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(el);
    fit.fit();
    session.current = { term, socket: null, fit };
    // The terminal keeps Tab and Escape for the shell: Ctrl+] (as in telnet) moves the focus out of it.
    term.attachCustomKeyEventHandler((e) => {
      if (e.type === 'keydown' && e.ctrlKey && e.key === ']') {
        el.closest('.stack')?.querySelector<HTMLButtonElement>('button')?.focus();
        return false;
      }
      return true;
    });
    const encoder = new TextEncoder();
    term.onData((data) => {
      const socket = session.current?.socket;
      if (socket?.readyState === WebSocket.OPEN) socket.send(encoder.encode(data));
    });
    term.onResize(({ cols, rows }) => {
      const socket = session.current?.socket;
      if (socket?.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: 'resize', cols, rows }));
    });
    const resize = new ResizeObserver(() => fit.fit());
    resize.observe(el);
    return () => {
      resize.disconnect();
      session.current?.socket?.close();
      term.dispose();
      session.current = null;
    };
  }, []);

  const connect = async () => {
    const s = session.current;
    if (!s) return;
    setState({ kind: 'connecting' });
    try {
      const { ticket: t } = await ticket.mutateAsync({ target });
      const url = new URL(target, window.location.href);
      url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
      url.search = new URLSearchParams({ ticket: t, cols: String(s.term.cols), rows: String(s.term.rows) }).toString();
      const socket = new WebSocket(url);
      socket.binaryType = 'arraybuffer';
      s.socket = socket;
      socket.onopen = () => {
        setState({ kind: 'open' });
        s.term.focus();
      };
      socket.onmessage = (event) => {
        if (typeof event.data === 'string') {
          const message = JSON.parse(event.data) as { type: string; code?: number; reason?: string; message?: string };
          if (message.type === 'exit')
            setState({
              kind: 'closed',
              reason: `The shell exited${message.reason ? ` (${message.reason})` : ''} with code ${message.code ?? '?'}.`,
            });
          if (message.type === 'error') s.term.write(`\r\n[${message.message ?? 'error'}]\r\n`);
          return;
        }
        s.term.write(new Uint8Array(event.data as ArrayBuffer));
      };
      socket.onclose = (event) => {
        setState((prev) => (prev.kind === 'closed' ? prev : { kind: 'closed', reason: `Disconnected (${event.code}).` }));
        s.socket = null;
      };
    } catch {
      setState({ kind: 'idle' });
    }
  };

  return (
    <div className="stack">
      <div className="spread">
        <h2>Terminal</h2>
        <div className="row">
          {state.kind === 'open' ? (
            <button type="button" onClick={() => session.current?.socket?.close()}>
              Disconnect
            </button>
          ) : (
            <button type="button" className="primary" onClick={connect} disabled={state.kind === 'connecting'}>
              {state.kind === 'closed' ? 'Reconnect' : 'Open terminal'}
            </button>
          )}
        </div>
      </div>
      <p className="muted" role="status" aria-live="polite">
        {state.kind === 'idle' && 'Opens /bin/sh in the running container.'}
        {state.kind === 'connecting' && 'Connecting...'}
        {state.kind === 'open' && 'Connected. Keys go to the shell; Ctrl+] moves the focus out of the terminal.'}
        {state.kind === 'closed' && state.reason}
      </p>
      <ErrorNotice error={ticket.error} title="Could not open a terminal" />
      <section ref={host} className="terminal-host" aria-label="Terminal" />
    </div>
  );
}
