import { isEnginePassword } from '../domain/database-engines.js';
import type { EnvironmentRecord } from '../domain/environments.js';
import { ConflictError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { ServiceRecord, ServiceSource } from '../domain/types.js';
import type { Store } from '../persistence/store.js';
import type { ServiceDeps } from '../platform/deps.js';
import { groupBy } from '../platform/group-by.js';
import { generatedHostname, generatedLabel } from '../domain/environments.js';
import { generateAccessKeyPair, generatePassword } from '../platform/secret-box.js';
import type { ClonedStorageCredentialsView } from './environment-views.js';
import type { HostPortAllocator } from '../projects/host-port-allocator.js';

/**
 * Copies an environment's services into another, inside the caller's transaction: their build and
 * run settings, the git token and every variable as stored (ciphertext copied, never decrypted), a
 * host port each, and nothing that is about running (no deployments, status `idle`). Domains are
 * never copied (a hostname routes to one service); generated hostnames follow from the new
 * environment. A database is copied empty (its volume is named by the new service's id) with new
 * passwords: a credential of a staging or preview copy must not open production's database. A
 * storage instance likewise, empty with the same bucket name and a new key pair, whose secret is
 * answered here once (as at create) and otherwise reached only through `${slug.KEY}` references.
 */
export async function copyServices(
  deps: ServiceDeps,
  hostPorts: HostPortAllocator,
  tx: Store,
  services: ServiceRecord[],
  target: { environment: EnvironmentRecord; scope: string },
  takenLabels: ReadonlyMap<string, ServiceRecord>,
): Promise<{ copies: ServiceRecord[]; storageCredentials: ClonedStorageCredentialsView[] }> {
  const now = deps.clock.now();
  const copies: ServiceRecord[] = [];
  const storageCredentials: ClonedStorageCredentialsView[] = [];
  const variablesOf = groupBy(await tx.env.list(services.map((s) => s.id)), (v) => v.serviceId);
  for (const [i, service] of services.entries()) {
    assertLabelFree(service, target.scope, takenLabels, null);
    // One millisecond apart: the copies list in the order of what they copy.
    const at = new Date(now.getTime() + i);
    const id = newId();
    let source = copiedSource(service.source, service.slug, target.scope, deps.config.rootDomain);
    if (source.kind === 'storage') {
      const keys = generateAccessKeyPair();
      source = { ...source, accessKeyId: keys.accessKeyId, secretAccessKeyEncrypted: deps.secrets.encrypt(keys.secretAccessKey) };
      storageCredentials.push({ storageId: id, ...keys });
    }
    const copy: ServiceRecord = {
      ...service,
      id,
      environmentId: target.environment.id,
      hostPort: await hostPorts.allocate(tx),
      source,
      status: 'idle',
      reachable: false,
      preferredDomain: null,
      detectedBuildMethod: null,
      framework: null,
      lastDeployedAt: null,
      createdAt: at,
      updatedAt: at,
    };
    await tx.projects.insertService(copy);
    const engine = copy.source.kind === 'database' ? copy.source.engine : null;
    for (const variable of variablesOf.get(service.id) ?? []) {
      const fresh = engine !== null && isEnginePassword(engine, variable.key);
      await tx.env.insert({
        ...variable,
        id: newId(),
        serviceId: copy.id,
        valueEncrypted: fresh ? deps.secrets.encrypt(generatePassword()) : variable.valueEncrypted,
        secret: fresh || variable.secret,
        createdAt: at,
        updatedAt: at,
      });
    }
    copies.push(copy);
  }
  return { copies, storageCredentials };
}

/**
 * Refuses a name under which `service` would get another service's generated hostname label (slugs
 * are never changed behind `${slug.KEY}` references, so the caller chooses another environment name).
 * `ownEnvironmentId`: the environment being renamed, whose services' labels are moving, not taken.
 */
export function assertLabelFree(
  service: ServiceRecord,
  scope: string,
  labels: ReadonlyMap<string, ServiceRecord>,
  ownEnvironmentId: string | null,
): void {
  const label = generatedLabel(service, scope);
  const holder = label ? labels.get(label) : undefined;
  if (holder && holder.environmentId !== ownEnvironmentId) {
    throw new ConflictError(
      `"${service.name}" would get the generated hostname label "${label}" of another service; choose another environment name`,
      { hostnameLabel: label },
    );
  }
}

/** A database's public hostname is the generated one of its new environment: a custom one is a hostname, never copied. */
function copiedSource(source: ServiceSource, slug: string, scope: string, rootDomain: string | null): ServiceSource {
  if (source.kind !== 'database') return source;
  return { ...source, publicHostname: generatedHostname({ slug }, scope, rootDomain) };
}
