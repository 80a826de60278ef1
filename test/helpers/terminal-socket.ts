import WebSocket from 'ws';
import { until } from './until.js';

/** A terminal WebSocket of the platform's, as a client holds it: binary frames are output, text frames control messages. */
export interface TerminalSocket {
  ws: WebSocket;
  send(text: string): void;
  output(): string;
  controls: Array<Record<string, unknown>>;
  /** The close code, once the platform closed it. */
  closed: Promise<number>;
  /** Resolves once the output contains `text`. */
  waitFor(text: string, timeoutMs?: number): Promise<void>;
}

/** Opens `/api/ws/...` on the platform at `baseUrl` with a bearer token; rejects when the upgrade is refused. */
export async function openTerminal(baseUrl: string, pathname: string, token: string): Promise<TerminalSocket> {
  const ws = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}${pathname}`, { headers: { authorization: `Bearer ${token}` } });
  const chunks: Buffer[] = [];
  const controls: Array<Record<string, unknown>> = [];
  ws.on('message', (data, binary) => (binary ? chunks.push(data as Buffer) : controls.push(JSON.parse(data.toString()))));
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`terminal refused: ${res.statusCode}`)));
  });
  const output = () => Buffer.concat(chunks).toString('latin1');
  return {
    ws,
    send: (text) => ws.send(Buffer.from(text), { binary: true }),
    output,
    controls,
    closed,
    waitFor: (text, timeoutMs = 15_000) =>
      until(async () => output().includes(text), timeoutMs, `terminal output ${text}`, 50).then(() => undefined),
  };
}
