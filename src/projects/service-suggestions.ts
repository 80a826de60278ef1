import type { ServiceRecord } from '../domain/types.js';
import type { Actor } from '../domain/access.js';
import { ENGINE_SPECS, databaseEngineOf } from '../domain/database-engines.js';
import { derivesVariable, STORAGE_VARIABLES, storageOf } from '../domain/storage-server.js';
import type { ServiceDeps } from '../platform/deps.js';
import { projectFor, serviceFor } from '../platform/lookup.js';
import type { SuggestionView } from './project-views.js';

/**
 * What a service's variables may reference: its own port and host port, its environment's variables
 * (`${slug.KEY}`), and each database's connection URL and storage instance's variables, as references.
 */
export class ServiceSuggestions {
  constructor(private readonly deps: ServiceDeps) {}

  async forService(
    actor: Actor,
    serviceId: string,
  ): Promise<{ suggestions: Array<{ key: string; label: string }>; databaseVariables: SuggestionView[] }> {
    const service = await serviceFor(this.deps.store, actor, serviceId);
    // Only its own environment's services: `${slug.KEY}` resolves there.
    const siblings = await this.deps.store.projects.listServicesIn([service.environmentId]);
    const vars = await this.deps.store.env.list(siblings.map((s) => s.id));
    const byId = new Map(siblings.map((s) => [s.id, s]));
    const suggestions: Array<{ key: string; label: string }> = [
      { key: 'hostPort', label: `Host port of this service (${service.hostPort})` },
      { key: 'PORT', label: `Port the service listens on inside its container (${service.internalPort})` },
    ];
    for (const v of vars) {
      const owner = byId.get(v.serviceId)!;
      // A storage instance's derived variables win over stored ones of their names: listed once, below.
      if (derivesVariable(owner, v.key)) continue;
      suggestions.push({ key: `${owner.slug}.${v.key}`, label: `${v.key} of ${owner.name}: reference it as \${${owner.slug}.${v.key}}` });
    }
    for (const owner of siblings.filter((s) => storageOf(s) !== null)) {
      for (const [key, what] of Object.entries(STORAGE_VARIABLES)) {
        suggestions.push({
          key: `${owner.slug}.${key}`,
          label: `${key}, the ${what} of storage ${owner.name}: reference it as \${${owner.slug}.${key}}`,
        });
      }
    }
    return { suggestions, databaseVariables: databaseSuggestionsFor(siblings) };
  }

  /**
   * Connection URLs for each database service of the project, as other services reach it: one per
   * slug, since a reference resolves in the environment of the service that holds it.
   */
  async forProject(actor: Actor, projectId: string): Promise<SuggestionView[]> {
    const project = await projectFor(this.deps.store, actor, projectId);
    const services = await this.deps.store.projects.listServices([project.id]);
    return databaseSuggestionsFor(services.filter((s, i) => services.findIndex((o) => o.slug === s.slug) === i));
  }
}

/** A database's connection URL and a storage instance's connection variables, as references: no secret is in them. */
function databaseSuggestionsFor(services: ServiceRecord[]): SuggestionView[] {
  const suggestions: SuggestionView[] = [];
  for (const service of services) {
    if (storageOf(service)) {
      for (const [key, what] of Object.entries(STORAGE_VARIABLES)) {
        suggestions.push({
          key,
          value: `\${${service.slug}.${key}}`,
          label: `storage "${service.name}" ${what} (${service.slug}:${service.internalPort})`,
        });
      }
      continue;
    }
    const engine = databaseEngineOf(service);
    if (!engine) continue;
    const spec = ENGINE_SPECS[engine];
    // References, not literal values: the URL resolves at deploy time and no password is echoed.
    const value = spec.connectionUrl((key) => `\${${service.slug}.${key}}`, service.slug, service.internalPort);
    suggestions.push({
      key: spec.urlKey,
      value,
      label: `${engine} "${service.name}" connection URL (${service.slug}:${service.internalPort})`,
    });
  }
  return suggestions;
}
