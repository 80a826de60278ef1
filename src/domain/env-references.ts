/**
 * `${<service_slug>.<KEY>}` references between the variables of one project's services.
 * Resolution is recursive; a cycle or an unknown reference never throws: the reference
 * is left as written and reported, so a caller can show it and a deploy can refuse it.
 */
const REFERENCE = /\$\{([a-z0-9-]+)\.([A-Z_][A-Z0-9_]*)\}/g;
/**
 * `${PREVIEW_URL}`, `${PR_NUMBER}`, `${PR_BRANCH}`: a preview's own values (src/previews), read from the
 * variables of that name of the service whose value holds them; left as written anywhere else.
 */
const PREVIEW_REFERENCE = /\$\{(PREVIEW_URL|PR_NUMBER|PR_BRANCH)\}/g;

/** The services a value references (`${slug.KEY}`), in order, once each. */
export function referencedSlugs(raw: string): string[] {
  return [...new Set([...raw.matchAll(REFERENCE)].map((m) => m[1]!))];
}

export type ReferenceProblem =
  | { kind: 'unknown_service'; reference: string; serviceSlug: string }
  | { kind: 'unknown_key'; reference: string; serviceSlug: string; key: string }
  | { kind: 'cycle'; reference: string; chain: string[] }
  | { kind: 'too_deep'; reference: string }
  | { kind: 'too_long'; reference: string };

export interface Resolution {
  value: string;
  problems: ReferenceProblem[];
  /** Every `slug.KEY` the value reached, directly or through other references. */
  reached: string[];
}

/** serviceSlug -> (KEY -> raw value) */
export type ProjectEnv = ReadonlyMap<string, ReadonlyMap<string, string>>;

const MAX_DEPTH = 32;
/** A value that expands past this is refused: references that double at each level would otherwise grow exponentially. */
export const MAX_RESOLVED_LENGTH = 64 * 1024;

export function resolveValue(raw: string, env: ProjectEnv, self: { serviceSlug: string; key: string }): Resolution {
  const state: ExpandState = { problems: [], reached: new Set(), memo: new Map() };
  const value = expand(raw, env, [`${self.serviceSlug}.${self.key}`], state);
  return { value, problems: state.problems, reached: [...state.reached] };
}

interface ExpandState {
  problems: ReferenceProblem[];
  reached: Set<string>;
  /** Each target is expanded once per call: its problems are reported the first time only. */
  memo: Map<string, string>;
}

function expand(raw: string, env: ProjectEnv, chain: string[], state: ExpandState): string {
  const { problems } = state;
  let length = 0;
  const owner = chain.at(-1)!.split('.')[0]!;
  const text = raw.includes('${P')
    ? raw.replace(PREVIEW_REFERENCE, (bare, key: string) => (env.get(owner)?.has(key) ? `\${${owner}.${key}}` : bare))
    : raw;
  return text.replace(REFERENCE, (reference, serviceSlug: string, key: string) => {
    const target = `${serviceSlug}.${key}`;
    state.reached.add(target);
    const value = state.memo.get(target) ?? expandTarget(reference, target, serviceSlug, key, env, chain, state);
    length += value.length;
    if (length > MAX_RESOLVED_LENGTH) {
      problems.push({ kind: 'too_long', reference });
      return reference;
    }
    return value;
  });
}

function expandTarget(
  reference: string,
  target: string,
  serviceSlug: string,
  key: string,
  env: ProjectEnv,
  chain: string[],
  state: ExpandState,
): string {
  const { problems } = state;
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
  const value = expand(targetRaw, env, [...chain, target], state);
  state.memo.set(target, value);
  return value;
}

export function describeProblem(problem: ReferenceProblem): string {
  switch (problem.kind) {
    case 'unknown_service':
      return `${problem.reference}: no service with slug "${problem.serviceSlug}" in this environment`;
    case 'unknown_key':
      return `${problem.reference}: service "${problem.serviceSlug}" has no variable ${problem.key}`;
    case 'cycle':
      return `${problem.reference}: reference cycle ${problem.chain.join(' -> ')}`;
    case 'too_deep':
      return `${problem.reference}: references nested deeper than ${MAX_DEPTH}`;
    case 'too_long':
      return `${problem.reference}: the resolved value would exceed ${MAX_RESOLVED_LENGTH} characters`;
  }
}
