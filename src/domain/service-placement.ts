import { ValidationError } from './errors.js';

/** Node roles a stateless service may be held to. */
export const PLACEMENT_ROLES = ['manager', 'worker'] as const;
export type PlacementRole = (typeof PLACEMENT_ROLES)[number];

/**
 * Where a stateless service's replicas may run on the cluster (issue 31): servers whose labels have each `must`
 * pair, none of the `mustNot` pairs, and the role if one is named. Nothing on a single server (plain containers
 * run on the host that runs the platform).
 */
export interface Placement {
  must: Record<string, string>;
  mustNot: Record<string, string>;
  role: PlacementRole | null;
}

/** A placement that holds a service to nothing is stored as none. */
export function placementOrNull(placement: Partial<Placement> | null | undefined): Placement | null {
  if (!placement) return null;
  const value = { must: placement.must ?? {}, mustNot: placement.mustNot ?? {}, role: placement.role ?? null };
  return Object.keys(value.must).length || Object.keys(value.mustNot).length || value.role ? value : null;
}

/**
 * A placement checked against the servers' labels: a `must` label no server has is a 400 listing the labels that
 * exist, since a Swarm task whose constraint no node meets stays `pending` for ever.
 */
export function checkPlacement(placement: Partial<Placement> | null | undefined, serverLabels: Record<string, string>[]): void {
  if (!placement) return;
  const existing = [...new Set(serverLabels.flatMap((labels) => Object.entries(labels).map(([k, v]) => `${k}=${v}`)))].sort();
  const missing = Object.entries(placement.must ?? {})
    .map(([key, value]) => `${key}=${value}`)
    .filter((label) => !existing.includes(label));
  if (missing.length > 0)
    throw new ValidationError(
      'placement',
      `No server has the label${missing.length > 1 ? 's' : ''} ${missing.join(', ')}; the labels that exist are: ${existing.join(', ') || 'none'}`,
      { labels: existing },
    );
}

/** Swarm's constraints for a placement: `node.labels.k==v`, `node.labels.k!=v`, `node.role==r`. */
export function swarmConstraints(placement: Partial<Placement> | null | undefined): string[] {
  if (!placement) return [];
  return [
    ...Object.entries(placement.must ?? {}).map(([key, value]) => `node.labels.${key}==${value}`),
    ...Object.entries(placement.mustNot ?? {}).map(([key, value]) => `node.labels.${key}!=${value}`),
    ...(placement.role ? [`node.role==${placement.role}`] : []),
  ];
}
