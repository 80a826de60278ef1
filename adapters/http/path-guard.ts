/*
 * Request paths are matched as opaque segments after one decoding. A segment that decodes to `.`
 * or `..`, an encoded separator (`%2f`, `%5c`), a raw backslash or a malformed escape is refused
 * before any routing: URL normalisation would otherwise turn `/api/services/S/env/%2e%2e` into
 * `/api/services/S` and a DELETE of a variable into a DELETE of the service.
 */

const ENCODED_SEPARATOR = /%(2f|5c)/i;
/** No id, slug or name holds a control character (NUL included), encoded or not. */
const CONTROL = /[\u0000-\u001f\u007f]/;

/** What is wrong with the path of a request target (`/a/b?q`), or null when it may be routed. */
export function pathProblem(target: string): string | null {
  const end = target.search(/[?#]/);
  const pathname = end === -1 ? target : target.slice(0, end);
  for (const segment of pathname.split('/')) {
    if (ENCODED_SEPARATOR.test(segment) || segment.includes('\\')) return 'a path segment may not contain an encoded "/" or "\\"';
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      return 'a path segment has a malformed percent-escape';
    }
    if (decoded === '.' || decoded === '..') return 'a path segment may not be "." or ".." (percent-encoded or not)';
    if (CONTROL.test(decoded)) return 'a path segment may not contain control characters (NUL included)';
  }
  return null;
}

/** `host[:port]`: a registered name or IPv4 address (RFC 3986 reg-name characters) or a bracketed IPv6 literal. */
const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]+)(?::[0-9]{0,5})?$/;

/**
 * What is wrong with a request's Host header, or null. HTTP/1.1 requires one (RFC 9112 section 3.2);
 * Node would answer its absence with a bare 400 (the server turns that off: server.ts), and URLs are
 * built from it, so a malformed one is refused here too. HTTP/1.0 may leave it out.
 */
export function hostProblem(req: { httpVersion: string; headers: { host?: string | undefined } }): string | null {
  const host = req.headers.host;
  if (host === undefined) return req.httpVersion === '1.0' ? null : 'An HTTP/1.1 request needs a Host header';
  if (!HOST.test(host)) return 'The Host header is not a host name with an optional port';
  try {
    new URL(`http://${host}/`);
  } catch {
    return 'The Host header is not a host name with an optional port';
  }
  return null;
}
