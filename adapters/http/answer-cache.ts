import type { ServerResponse } from 'node:http';
import type { ProcedureScope, ReadTrace } from '../../src/index.js';

interface KeptAnswer {
  body: string | Buffer;
  bytes: number;
  checks: Array<() => boolean>;
  /** The procedure's scope, asked again of the caller on every request. */
  scope: ProcedureScope | undefined;
}

/** How much the kept answers may hold in all; the oldest go first. */
const MAX_BYTES = 16 * 1024 * 1024;
const MAX_ANSWERS = 2000;
/**
 * Below this an answer is kept as a string: Node writes a string body with the head in one write, a Buffer in
 * a second one. Above it, as bytes: a large string would be copied with the head on every request.
 */
const STRING_BELOW_BYTES = 64 * 1024;
/** An answer larger than this is not kept (it would push out everything else). */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/**
 * The serialised answers of the REST reads that opt in (`answerCache` in their meta), by request target
 * and owner: sent again while every cached read they were made of is current, so that a read served many
 * times runs its procedure and JSON encoding once per change, not per request (issue 32). What an answer
 * was made of comes from its read trace (src/platform/read-trace.ts): an answer made only of checked reads
 * (versioned-cache hits, statements whose tables are named) is kept, with a check per read; any other is not. The credential, its scope and
 * its request budget are checked on every request (routers/trpc.ts, admitKeptAnswer).
 */
export class AnswerCache {
  /** By request target (path and query, as sent), then owner. */
  private readonly byTarget = new Map<string, Map<string, KeptAnswer>>();
  /** Every kept answer in the order it was kept, for eviction. */
  private readonly order = new Map<KeptAnswer, { target: string; owner: string }>();
  private bytes = 0;

  /** Whether anything is kept for this target (before the credential is looked at: most requests stop here). */
  has(target: string): boolean {
    return this.byTarget.has(target);
  }

  /** The answer kept for this target and owner, while current. */
  get(target: string, owner: string): KeptAnswer | undefined {
    const answer = this.byTarget.get(target)?.get(owner);
    if (!answer) return undefined;
    if (answer.checks.every((current) => current())) return answer;
    this.drop(answer);
    return undefined;
  }

  /** Keeps `body` when its trace says it can be checked later; returns the bytes to send either way. */
  keep(target: string, trace: ReadTrace, scope: ProcedureScope | undefined, json: string): string | Buffer {
    const bytes = Buffer.byteLength(json);
    const body = bytes < STRING_BELOW_BYTES ? json : Buffer.from(json);
    if (trace.untracked || trace.owner === null || trace.checks.length === 0 || bytes > MAX_ANSWER_BYTES) return body;
    const owners = this.byTarget.get(target) ?? new Map<string, KeptAnswer>();
    const previous = owners.get(trace.owner);
    if (previous) this.drop(previous);
    const answer: KeptAnswer = { body, bytes, checks: trace.checks, scope };
    owners.set(trace.owner, answer);
    this.byTarget.set(target, owners);
    this.order.set(answer, { target, owner: trace.owner });
    this.bytes += bytes;
    for (const [oldest] of this.order) {
      if (this.bytes <= MAX_BYTES && this.order.size <= MAX_ANSWERS) break;
      this.drop(oldest);
    }
    return body;
  }

  private drop(answer: KeptAnswer): void {
    const where = this.order.get(answer);
    if (!where) return;
    this.order.delete(answer);
    this.bytes -= answer.bytes;
    const owners = this.byTarget.get(where.target);
    if (owners?.get(where.owner) === answer) owners.delete(where.owner);
    if (owners?.size === 0) this.byTarget.delete(where.target);
  }
}

/** A REST answer (rest.ts): a procedure's, or a kept one, sent the same way. */
export function sendJsonBody(res: ServerResponse, status: number, body: string | Buffer): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json');
  res.end(body);
}
