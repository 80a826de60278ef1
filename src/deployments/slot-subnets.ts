/** The subnets the slot network may take: CIDR arithmetic on IPv4, nothing of the engine's. */

/** 172.16.0.0/16 lies outside Docker's default address pools: /22 blocks of it, 510 slot pairs each. */
const AUTO_CANDIDATES = Array.from({ length: 64 }, (_, i) => `172.16.${i * 4}.0/22`);

function range(cidr: string): [number, number] {
  const [address, bits] = cidr.split('/') as [string, string];
  const base = address.split('.').reduce((n, part) => n * 256 + Number(part), 0);
  const size = 2 ** (32 - Number(bits));
  const first = base - (base % size);
  return [first, first + size - 1];
}

export function overlaps(a: string, b: string): boolean {
  const [aFirst, aLast] = range(a);
  const [bFirst, bLast] = range(b);
  return aFirst <= bLast && bFirst <= aLast;
}

/** The subnet setting clashes with packet-filter rules that another install still uses. */
export class SlotSubnetTakenError extends Error {}

/**
 * The subnets to try for the slot network, in order: the configured one, or (`auto`) the free /22s of
 * 172.16.0.0/16. Those that overlap a subnet live rules name are never offered: their REJECT would
 * close the new network's slots to the proxy. The engine skips those its own networks overlap.
 */
export function slotSubnetCandidates(setting: string, taken: Array<{ subnet: string; by: string }>): string[] {
  if (setting !== 'auto') {
    const clash = taken.find((t) => overlaps(setting, t.subnet));
    if (clash)
      throw new SlotSubnetTakenError(
        `SLOT_SUBNET ${setting} overlaps ${clash.subnet}, which the packet-filter rules of ${clash.by} name; choose another SLOT_SUBNET, or auto`,
      );
    return [setting];
  }
  return AUTO_CANDIDATES.filter((candidate) => !taken.some((t) => overlaps(candidate, t.subnet)));
}
