/**
 * What an event of the platform's stream (`events.stream`, docs/events.md) makes stale on screen: the
 * procedures whose answers it changes. The shell invalidates them as each event arrives, so deployment
 * states and service status change without a reload and without polling every few seconds.
 */
export type ProcedurePath = readonly [string, string];

const DEPLOYMENT: ProcedurePath[] = [
  ['services', 'overview'],
  ['deployments', 'list'],
  ['deployments', 'get'],
  ['projects', 'bySlug'],
  ['projects', 'list'],
  ['databaseServices', 'list'],
];
const SERVICE: ProcedurePath[] = [
  ['services', 'overview'],
  ['projects', 'bySlug'],
  ['databaseServices', 'list'],
];

export function staleAfter(type: string): ProcedurePath[] {
  const family = type.split('.')[0];
  switch (family) {
    case 'deployment':
      return DEPLOYMENT;
    case 'service':
    case 'database':
      return SERVICE;
    case 'backup':
    case 'restore':
    case 'drill':
      return [['backups', 'list']];
    case 'import':
      return [['databaseImports', 'list']];
    case 'server':
      return [
        ['servers', 'list'],
        ['servers', 'get'],
      ];
    case 'api_key':
      return [['apiKeys', 'list']];
    case 'token':
      return [['user', 'listTokens']];
    default:
      return [];
  }
}

/** The event inside what the subscription hands out: `tracked(id, {type: 'event', event})`, or a ping. */
export function eventOf(item: unknown): { type: string; projectId: string | null } | null {
  if (typeof item !== 'object' || item === null) return null;
  const payload = 'data' in item && typeof item.data === 'object' && item.data !== null ? item.data : item;
  if (!('type' in payload) || payload.type !== 'event' || !('event' in payload)) return null;
  const event = payload.event as { type?: unknown; projectId?: unknown };
  if (typeof event?.type !== 'string') return null;
  return { type: event.type, projectId: typeof event.projectId === 'string' ? event.projectId : null };
}

/**
 * How often a screen reads again on its own: with the stream connected only as a safety net (what no
 * event reports, such as reachability, still refreshes), without it as before.
 */
export const LIVE_FALLBACK_MS = 30_000;
export function pollEvery(live: boolean, ms: number): number {
  return live ? Math.max(ms, LIVE_FALLBACK_MS) : ms;
}
