import { ValidationError } from '../domain/errors.js';
import { checkPlacement, placementOrNull, type Placement } from '../domain/service-placement.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { ServicePlacementInput } from './project.inputs.js';

/**
 * A service's placement after a create or a PATCH, held to the rules: for stateless services only (a database
 * or a storage instance runs where its volume is), and every `must` label on some server (a 400 listing the
 * labels that exist). Null clears it; a placement that holds to nothing is stored as none.
 */
export async function placementAfter(deps: ServiceDeps, input: ServicePlacementInput | null, stateful: boolean): Promise<Placement | null> {
  const placement = placementOrNull(input);
  if (!placement) return null;
  if (stateful)
    throw new ValidationError(
      'placement',
      'A database or a storage instance runs on the server that holds its volume: placement is for stateless services',
    );
  checkPlacement(
    placement,
    (await deps.store.servers.list()).map((server) => server.labels),
  );
  return placement;
}
