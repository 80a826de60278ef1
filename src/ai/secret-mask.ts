/**
 * Masking before anything leaves the machine: every known secret value, then whatever looks like a
 * credential (URL user info, bearer tokens, `password=...` pairs, well-known token formats, private
 * keys). Applied to every text an AI provider is sent; over-masking is the safe failure.
 */
export const MASK = '********';

const KEY_NAMES = String.raw`[\w.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?|auth)[\w.-]*`;

const PATTERNS: Array<[RegExp, string]> = [
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g, MASK],
  // scheme://user:password@host
  [/([a-z][a-z0-9+.-]*:\/\/)([^\s/:@]*):([^\s/@]+)@/gi, `$1$2:${MASK}@`],
  [/\b(bearer|basic|token)(\s+)[A-Za-z0-9._~+/=-]{8,}/gi, `$1$2${MASK}`],
  [new RegExp(String.raw`\b(${KEY_NAMES})(["']?\s*[=:]\s*["']?)([^\s"',;&]+)`, 'gi'), `$1$2${MASK}`],
  [
    /\b(?:slw_[A-Za-z0-9_-]{8,}|sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})\b/g,
    MASK,
  ],
];

/** Env keys whose values are secrets even when the variable was not marked secret. */
const SECRET_KEY = /pass|secret|token|key|credential|private|auth|dsn/i;

/** The values to mask of a service's resolved env: secret ones, and those whose key names a secret. */
export function secretEnvValues(env: Record<string, string>, secretValues: string[]): string[] {
  // Short values of such keys (`true`, `8080`) are settings, not secrets, and would mask half the log.
  return [...secretValues, ...Object.entries(env).flatMap(([key, value]) => (SECRET_KEY.test(key) && value.length >= 8 ? [value] : []))];
}

export function maskSecrets(text: string, secrets: Iterable<string>): string {
  // Longest first, so a secret that contains another is masked whole.
  const values = [...new Set([...secrets].filter((s) => s.length >= 3))].sort((a, b) => b.length - a.length);
  let out = text;
  for (const value of values) out = out.split(value).join(MASK);
  for (const [pattern, replacement] of PATTERNS) out = out.replace(pattern, replacement);
  return out;
}
