import { DeliveryError, type EventSeverity } from '../../src/index.js';
import { answerOf, type GuardedHttp, type OutboundResponse } from './guarded-http.js';

/** Each family's HTTP notifiers go through the guarded client. */
export type Http = Pick<GuardedHttp, 'request'>;

export const SEVERITY_COLORS: Record<EventSeverity, number> = {
  info: 0x3b82f6,
  success: 0x22c55e,
  warning: 0xf59e0b,
  error: 0xef4444,
};

export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** A 2xx is accepted; anything else is the receiver's refusal, with its answer. */
export function expectOk(
  vendor: string,
  response: OutboundResponse,
  accepted: (status: number) => boolean = (s) => s >= 200 && s < 300,
): { statusCode: number } {
  if (!accepted(response.status)) throw new DeliveryError(`${vendor} answered ${answerOf(response)}`, response.status);
  return { statusCode: response.status };
}

export const JSON_HEADERS = { 'content-type': 'application/json' };
