import { isIP } from 'node:net';

/*
 * The ranges an outbound notification may not reach unless NOTIFY_ALLOW_PRIVATE_TARGETS=true:
 * loopback, private, link-local, shared (CGNAT), unspecified, multicast and reserved, in IPv4 and
 * IPv6 (IPv4-mapped and NAT64-less embeddings included). Checked on the resolved address of every
 * request and every redirect, so a name that resolves inward is refused too.
 */

function v4(address: string): number[] | null {
  const parts = address.split('.');
  if (parts.length !== 4) return null;
  const bytes = parts.map(Number);
  return bytes.every((b) => Number.isInteger(b) && b >= 0 && b <= 255) ? bytes : null;
}

function privateV4([a, b]: number[]): boolean {
  if (a === undefined || b === undefined) return true;
  return (
    a === 0 || // this network
    a === 10 ||
    a === 127 ||
    (a === 100 && b >= 64 && b <= 127) || // shared address space
    (a === 169 && b === 254) || // link-local (cloud metadata)
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 192 && b === 0) || // IETF protocol assignments
    (a === 198 && (b === 18 || b === 19)) || // benchmarking
    a >= 224 // multicast, reserved, broadcast
  );
}

/** The 8 groups of an IPv6 address, or null. */
function v6Groups(address: string): number[] | null {
  let text = address.toLowerCase().split('%')[0]!;
  let tail: number[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const bytes = v4(dotted[1]!);
    if (!bytes) return null;
    tail = [(bytes[0]! << 8) | bytes[1]!, (bytes[2]! << 8) | bytes[3]!];
    text = text.slice(0, -dotted[1]!.length);
    if (!text.endsWith('::')) text = text.slice(0, -1);
  }
  const [head, rest] = text.split('::');
  const parse = (part: string | undefined) =>
    part
      ? part
          .split(':')
          .filter((g) => g !== '')
          .map((g) => Number.parseInt(g, 16))
      : [];
  const front = parse(head);
  const back = [...parse(rest), ...tail];
  const missing = 8 - front.length - back.length;
  if (text.includes('::') ? missing < 0 : missing !== 0) return null;
  const groups = [...front, ...new Array(Math.max(missing, 0)).fill(0), ...back];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return privateV4(v4(address) ?? []);
  if (family !== 6) return true;
  const g = v6Groups(address);
  if (!g) return true;
  const [g0, , , , , g5, g6, g7] = g as [number, number, number, number, number, number, number, number];
  if (g.every((x) => x === 0)) return true; // ::
  if (g.slice(0, 7).every((x) => x === 0) && g7 === 1) return true; // ::1
  // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d): the IPv4 address decides.
  if (g.slice(0, 5).every((x) => x === 0) && (g5 === 0xffff || g5 === 0)) return privateV4([g6 >> 8, g6 & 0xff, g7 >> 8, g7 & 0xff]);
  if ((g0 & 0xfe00) === 0xfc00) return true; // unique local fc00::/7
  if ((g0 & 0xffc0) === 0xfe80) return true; // link-local fe80::/10
  if ((g0 & 0xff00) === 0xff00) return true; // multicast
  if (g0 === 0x64 && g[1] === 0xff9b) return privateV4([g6 >> 8, g6 & 0xff, g7 >> 8, g7 & 0xff]); // NAT64
  return false;
}
