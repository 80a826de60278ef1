import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { ERRORS, toErrorBody, type ErrorBody } from '../../routers/trpc.js';

/** An error's answer: the spec's body, with the status of its code. */
export function errorBodyOf(error: unknown): { status: number; body: ErrorBody } {
  const body = toErrorBody(error);
  return { status: ERRORS[body.error].http, body };
}

/**
 * Answers with `Connection: close` and then closes, for a request whose body was not read to its
 * end (413): the rest of it is drained for a moment so the client sees the answer, not a reset.
 */
export function sendErrorAndClose(res: ServerResponse, status: number, body: ErrorBody): void {
  closeAfterResponse(res);
  sendError(res, status, body);
}

/** `Connection: close` on the response under way, the connection lingering for the rest of the request as sendErrorAndClose's. */
export function closeAfterResponse(res: ServerResponse): void {
  res.shouldKeepAlive = false;
  res.setHeader('Connection', 'close');
  const socket = res.socket as (Socket & { destroySoon?: () => void }) | null;
  if (socket) {
    // Node destroys the socket as soon as a closing response is out, which resets a client still
    // uploading before it reads the answer: half-close instead, drop what still arrives, then destroy.
    socket.destroySoon = () => {
      if (socket.writable) socket.end();
      socket.resume();
      const timer = setTimeout(() => socket.destroy(), LINGER_MS);
      timer.unref();
      socket.once('end', () => {
        clearTimeout(timer);
        socket.destroy();
      });
    };
  }
}

const LINGER_MS = 1_000;

export function sendError(res: ServerResponse, status: number, body: ErrorBody): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json');
  const retryAfter = body.details.retryAfterSeconds;
  if (status === 429 && typeof retryAfter === 'number') res.setHeader('Retry-After', String(retryAfter));
  res.end(JSON.stringify(body));
}

/**
 * Requests Node's HTTP parser rejects (heads over 16 KB, bytes a request line may not hold,
 * smuggling attempts, bad chunk sizes) and CONNECT never reach koa: they get the same
 * `{error, message, details}` body here, written on the socket, and the connection is closed.
 */
export function answerParserRejections(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // A response already under way on this connection cannot be followed by another one.
    const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const [status, body] = parserRejection(error.code);
    writeRawError(socket, status, body);
  });
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    writeRawError(socket, 404, { error: 'not_found', message: `No route for ${req.method ?? 'CONNECT'} requests`, details: {} });
  });
}

function parserRejection(code: string | undefined): [number, ErrorBody] {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return [
        431,
        {
          error: 'payload_too_large',
          message: 'The request head (request line and headers) is larger than 16 KB',
          details: { limitBytes: 16_384 },
        },
      ];
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [408, { error: 'validation_error', message: 'The request was not received in time', details: { field: 'request' } }];
    default:
      // Only the parser's code: its message can quote the bytes that were sent.
      return [
        400,
        { error: 'validation_error', message: `Malformed HTTP request${code ? ` (${code})` : ''}`, details: { field: 'request' } },
      ];
  }
}

function writeRawError(socket: Duplex, status: number, body: ErrorBody): void {
  const json = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`,
  );
  setTimeout(() => socket.destroy(), 1_000).unref();
}
