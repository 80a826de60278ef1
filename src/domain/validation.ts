import { ValidationError } from './errors.js';

export const ENV_KEY_PATTERN = /^[A-Z_][A-Z0-9_]*$/;

export function assertEnvKey(key: string, field = 'key'): void {
  if (!ENV_KEY_PATTERN.test(key)) {
    throw new ValidationError(field, `Environment variable key ${JSON.stringify(key)} must match ^[A-Z_][A-Z0-9_]*$`);
  }
}

const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * RFC 1123 host name, lower-cased: labels of 1-63 letters, digits and inner hyphens,
 * at least two labels, 253 characters in all, a last label that is not all digits
 * (so an IP address is refused). A trailing dot is dropped.
 */
export function normalizeHostname(input: string, field = 'hostname'): string {
  const hostname = input.trim().toLowerCase().replace(/\.$/, '');
  const labels = hostname.split('.');
  const valid =
    hostname.length > 0 &&
    hostname.length <= 253 &&
    labels.length >= 2 &&
    labels.every((label) => LABEL.test(label)) &&
    !/^[0-9]+$/.test(labels[labels.length - 1]!);
  if (!valid) throw new ValidationError(field, `${JSON.stringify(input)} is not a valid hostname (RFC 1123)`);
  return hostname;
}

export const GIT_URL = /^(https?:\/\/|ssh:\/\/|git:\/\/)[^\s]+$|^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^\s]+$/;

/** Remote Git URLs only: http(s), ssh, git, or scp-like `user@host:path`. Never `file:` or a local path. */
export function assertRemoteGitUrl(url: string, field = 'repoUrl'): void {
  if (!GIT_URL.test(url)) {
    throw new ValidationError(field, `${JSON.stringify(url)} is not a remote Git URL (http, https, ssh or git)`);
  }
}

const HTTP_USERINFO = /^(https?:\/\/)([^@/?#]*)@/i;

/**
 * Splits the credential out of an http(s) repository URL (`https://user:token@host/repo.git`):
 * the URL without it, and the credential as a git token (`user:token`, or the lone `token`).
 * ssh and scp-like URLs keep their user name: it is a login, not a secret.
 */
export function splitGitUrlCredential(url: string): { url: string; credential: string | null } {
  const match = HTTP_USERINFO.exec(url);
  if (!match) return { url, credential: null };
  let credential: string;
  try {
    const [user, ...rest] = match[2]!.split(':');
    const password = rest.join(':');
    credential = password ? `${decodeURIComponent(user!)}:${decodeURIComponent(password)}` : decodeURIComponent(user!);
  } catch {
    credential = match[2]!;
  }
  return { url: match[1]! + url.slice(match[0].length), credential: credential === '' || credential === ':' ? null : credential };
}

export const REPO_FULL_NAME = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;

/** Docker image reference: [registry[:port]/]name[:tag][@digest], lower-case repository. */
// A first component is a registry only with a dot, a port or as localhost, as Docker reads it.
export const IMAGE_REF =
  /^(?:(?:[a-zA-Z0-9-]+\.[a-zA-Z0-9.-]+|localhost|[a-zA-Z0-9.-]+:[0-9]+)\/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@[A-Za-z0-9]+:[a-fA-F0-9]{32,})?$/;

export function assertImageReference(ref: string, field = 'containerImage'): void {
  if (!IMAGE_REF.test(ref)) throw new ValidationError(field, `${JSON.stringify(ref)} is not a valid image reference`);
}

/** A project or service name: trimmed, not empty, at most 100 characters. */
export function cleanName(name: string, field = 'name'): string {
  const trimmed = name.trim();
  if (!trimmed) throw new ValidationError(field, 'A name must not be empty');
  if (trimmed.length > 100) throw new ValidationError(field, 'A name may hold at most 100 characters');
  return trimmed;
}
