import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { IptablesTrafficGate } from '../../adapters/net/iptables.traffic-gate.js';

/**
 * The traffic gate against the real packet filter (root and iptables, as `npm test` provisions with
 * Docker): each sync replaces the installation's two chains whole, the jumps from OUTPUT are added
 * once, and remove() leaves nothing behind. The DNAT itself carrying traffic is proven end to end by
 * the zero-downtime and routing tests. No traffic is sent: the rules only name a test subnet. The
 * install has a slot network, as a live one does: a platform starting meanwhile removes the rules of
 * installs without one (see gate-leftovers.test.ts).
 */
const gate = new IptablesTrafficGate({ instanceId: 'gatetest0001', gatePort: 2999 });
const rules = (table: string) => execFileSync('iptables', ['--wait', '-t', table, '-S'], { encoding: 'utf8' }).split('\n');
const ours = (table: string) => rules(table).filter((r) => r.includes('GATETEST0001'));
const NETWORK = 'slipway-slots-gatetest0001';

const removeNetwork = () => {
  try {
    execFileSync('docker', ['network', 'rm', NETWORK], { stdio: 'ignore' });
  } catch {
    // not there
  }
};

beforeAll(() => {
  execFileSync('bash', ['test/provision/docker.sh'], { stdio: 'ignore' });
  removeNetwork();
  // Docker picks its subnet: only its labels matter here.
  execFileSync('docker', [
    'network',
    'create',
    '--label',
    'slipway.managed=true',
    '--label',
    'slipway.instance=gatetest0001',
    '--label',
    'slipway.role=slots',
    NETWORK,
  ]);
}, 120_000);

afterAll(async () => {
  await gate.remove();
  removeNetwork();
});

it("writes the open slots, refuses new connections to the rest of the subnet, redirects open slots' checks and sends the dial port to each service's port", async () => {
  await gate.sync('172.16.252.0/24', [
    { ip: '172.16.252.2', port: 3000 },
    { ip: '172.16.252.5', port: 8080 },
  ]);
  expect(ours('filter')).toEqual([
    '-N SLIPWAY-EDGE-GATETEST0001',
    '-A OUTPUT -d 172.16.252.0/24 -j SLIPWAY-EDGE-GATETEST0001',
    '-A SLIPWAY-EDGE-GATETEST0001 -d 172.16.252.2/32 -j RETURN',
    '-A SLIPWAY-EDGE-GATETEST0001 -d 172.16.252.5/32 -j RETURN',
    '-A SLIPWAY-EDGE-GATETEST0001 -p tcp -m tcp --tcp-flags FIN,SYN,RST,ACK SYN -j REJECT --reject-with tcp-reset',
  ]);
  expect(ours('nat')).toEqual([
    '-N SLIPWAY-GATE-GATETEST0001',
    '-A OUTPUT -d 172.16.252.0/24 -p tcp -j SLIPWAY-GATE-GATETEST0001',
    '-A SLIPWAY-GATE-GATETEST0001 -d 172.16.252.2/32 -p tcp -m tcp --dport 2999 -j REDIRECT --to-ports 2999',
    '-A SLIPWAY-GATE-GATETEST0001 -d 172.16.252.2/32 -p tcp -m tcp --dport 80 -j DNAT --to-destination 172.16.252.2:3000',
    '-A SLIPWAY-GATE-GATETEST0001 -d 172.16.252.5/32 -p tcp -m tcp --dport 2999 -j REDIRECT --to-ports 2999',
    '-A SLIPWAY-GATE-GATETEST0001 -d 172.16.252.5/32 -p tcp -m tcp --dport 80 -j DNAT --to-destination 172.16.252.5:8080',
  ]);
});

it('drops the jump of an installation from before the dial port (health checks only)', async () => {
  const fresh = new IptablesTrafficGate({ instanceId: 'gatetest0001', gatePort: 2999 });
  execFileSync('iptables', [
    '--wait',
    '-t',
    'nat',
    '-I',
    'OUTPUT',
    '-d',
    '172.16.252.0/24',
    '-p',
    'tcp',
    '--dport',
    '2999',
    '-j',
    'SLIPWAY-GATE-GATETEST0001',
  ]);
  await fresh.sync('172.16.252.0/24', [{ ip: '172.16.252.2', port: 3000 }]);
  expect(ours('nat').filter((r) => r.startsWith('-A OUTPUT'))).toEqual([
    '-A OUTPUT -d 172.16.252.0/24 -p tcp -j SLIPWAY-GATE-GATETEST0001',
  ]);
});

it('replaces the whole set at each sync and adds the jumps only once', async () => {
  await gate.sync('172.16.252.0/24', [{ ip: '172.16.252.3', port: 80 }]);
  await gate.sync('172.16.252.0/24', [{ ip: '172.16.252.3', port: 80 }]);
  expect(ours('filter').filter((r) => r.startsWith('-A OUTPUT'))).toHaveLength(1);
  expect(ours('nat').filter((r) => r.startsWith('-A OUTPUT'))).toHaveLength(1);
  expect(ours('filter').filter((r) => r.includes('RETURN'))).toEqual(['-A SLIPWAY-EDGE-GATETEST0001 -d 172.16.252.3/32 -j RETURN']);
  await gate.sync('172.16.252.0/24', []);
  expect(ours('nat').filter((r) => r.includes('REDIRECT'))).toEqual([]);
});

it("lists every install's rules with the subnets their jumps name, and removes another install's", async () => {
  const other = new IptablesTrafficGate({ instanceId: 'gatetest0002', gatePort: 2998 });
  try {
    await gate.sync('172.16.252.0/24', [{ ip: '172.16.252.3', port: 80 }]);
    await other.sync('172.16.253.0/24', []);
    await other.sync('172.16.253.128/25', []);
    const installs = await gate.installs();
    expect(installs.find((i) => i.id === 'GATETEST0001')).toEqual({ id: 'GATETEST0001', subnets: ['172.16.252.0/24'] });
    expect(installs.find((i) => i.id === 'GATETEST0002')).toEqual({
      id: 'GATETEST0002',
      subnets: ['172.16.253.0/24', '172.16.253.128/25'],
    });
    expect(gate.idOf('gatetest0002')).toBe('GATETEST0002');
    await gate.removeInstall('GATETEST0002');
    expect(
      rules('filter')
        .concat(rules('nat'))
        .filter((r) => r.includes('GATETEST0002')),
    ).toEqual([]);
    expect((await gate.installs()).map((i) => i.id)).not.toContain('GATETEST0002');
    expect(ours('filter').length).toBeGreaterThan(0);
  } finally {
    await other.remove();
  }
});

it('refuses what is not an address, and remove() leaves no rule or chain', async () => {
  await expect(gate.sync('172.16.252.0/24', [{ ip: '172.16.252.3 -j ACCEPT', port: 80 }])).rejects.toThrow(/not an IPv4 address/);
  await expect(gate.sync('172.16.252.0/24', [{ ip: '172.16.252.3', port: 0 }])).rejects.toThrow(/not a port/);
  await expect(gate.sync('any', [])).rejects.toThrow(/not an IPv4 subnet/);
  await gate.remove();
  expect(ours('filter')).toEqual([]);
  expect(ours('nat')).toEqual([]);
});
