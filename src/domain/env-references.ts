/**
 * `${<service_slug>.<KEY>}` references between the variables of one project's services.
 * Resolution is recursive; a cycle or an unknown reference never throws: the reference
 * is left as written and reported, so a caller can show it and a deploy can refuse it.
 */
const REFERENCE = /\$\{([a-z0-9-]+)\.([A-Z_][A-Z0-9_]*)\}/g;

export type ReferenceProblem =
  | { kind: 'unknown_service'; reference: string; serviceSlug: string }
  | { kind: 'unknown_key'; reference: string; serviceSlug: string; key: string }
  | { kind: 'cycle'; reference: string; chain: string[] }
  | { kind: 'too_deep'; reference: string };

export interface Resolution {
  value: string;
  problems: ReferenceProblem[];
  /** Every `slug.KEY` the value reached, directly or through other references. */
  reached: string[];
}

/** serviceSlug -> (KEY -> raw value) */
export type ProjectEnv = ReadonlyMap<string, ReadonlyMap<string, string>>;

const MAX_DEPTH = 32;

export function resolveValue(raw: string, env: ProjectEnv, self: { serviceSlug: string; key: string }): Resolution {
  const problems: ReferenceProblem[] = [];
  const reached = new Set<string>();
  const value = expand(raw, env, [`${self.serviceSlug}.${self.key}`], problems, reached);
  return { value, problems, reached: [...reached] };
}

function expand(raw: string, env: ProjectEnv, chain: string[], problems: ReferenceProblem[], reached: Set<string>): string {
  return raw.replace(REFERENCE, (reference, serviceSlug: string, key: string) => {
    const target = `${serviceSlug}.${key}`;
    reached.add(target);
    if (chain.includes(target)) {
      problems.push({ kind: 'cycle', reference, chain: [...chain, target] });
      return reference;
    }
    if (chain.length > MAX_DEPTH) {
      problems.push({ kind: 'too_deep', reference });
      return reference;
    }
    const vars = env.get(serviceSlug);
    if (!vars) {
      problems.push({ kind: 'unknown_service', reference, serviceSlug });
      return reference;
    }
    const targetRaw = vars.get(key);
    if (targetRaw === undefined) {
      problems.push({ kind: 'unknown_key', reference, serviceSlug, key });
      return reference;
    }
    return expand(targetRaw, env, [...chain, target], problems, reached);
  });
}

export function describeProblem(problem: ReferenceProblem): string {
  switch (problem.kind) {
    case 'unknown_service':
      return `${problem.reference}: no service with slug "${problem.serviceSlug}" in this project`;
    case 'unknown_key':
      return `${problem.reference}: service "${problem.serviceSlug}" has no variable ${problem.key}`;
    case 'cycle':
      return `${problem.reference}: reference cycle ${problem.chain.join(' -> ')}`;
    case 'too_deep':
      return `${problem.reference}: references nested deeper than ${MAX_DEPTH}`;
  }
}
