import type { SwarmNode } from './cluster-runtime.port.js';
import type { ServerState } from './server.records.js';

/** Swarm's node states as the API's three: `disconnected` is a node the manager lost, so `down`. */
export function stateOf(node: SwarmNode | undefined): ServerState {
  if (!node) return 'unknown';
  if (node.state === 'ready') return 'ready';
  if (node.state === 'down' || node.state === 'disconnected') return 'down';
  return 'unknown';
}

/** The label every joined node carries: which server row it is. */
export const SERVER_LABEL = 'slipway.server';

/** A node's whole label set: the user's, then the platform's own. */
export function nodeLabels(serverId: string, labels: Record<string, string>): Record<string, string> {
  return { ...labels, [SERVER_LABEL]: serverId };
}

/** The user's labels of a node's set: the platform's own (`slipway.*`) left out. */
export function userLabels(labels: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(labels).filter(([key]) => !key.startsWith('slipway.')));
}
