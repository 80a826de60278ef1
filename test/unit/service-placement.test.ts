import { describe, expect, it } from 'vitest';
import { checkPlacement, placementOrNull, swarmConstraints } from '../../src/domain/service-placement.js';
import { ValidationError } from '../../src/domain/errors.js';

describe('a service’s placement', () => {
  const servers: Record<string, string>[] = [{ zone: 'eu', disk: 'ssd' }, { zone: 'us' }, {}];

  it('becomes Swarm constraints: labels it must have, labels it must not have, a role', () => {
    expect(swarmConstraints({ must: { zone: 'eu' }, mustNot: { disk: 'hdd' }, role: 'worker' })).toEqual([
      'node.labels.zone==eu',
      'node.labels.disk!=hdd',
      'node.role==worker',
    ]);
    expect(swarmConstraints(null)).toEqual([]);
  });

  it('a must label no server has is a 400 on placement listing the labels that exist; mustNot labels need not exist', () => {
    expect(() => checkPlacement({ must: { zone: 'eu' }, mustNot: { gpu: 'none' } }, servers)).not.toThrow();
    try {
      checkPlacement({ must: { zone: 'ap', disk: 'ssd' } }, servers);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).details).toMatchObject({ field: 'placement', labels: ['disk=ssd', 'zone=eu', 'zone=us'] });
      expect((error as Error).message).toBe('No server has the label zone=ap; the labels that exist are: disk=ssd, zone=eu, zone=us');
    }
    expect(() => checkPlacement({ must: { zone: 'eu' } }, [])).toThrow(/the labels that exist are: none/);
  });

  it('one that holds to nothing is stored as none', () => {
    expect(placementOrNull({ must: {}, mustNot: {} })).toBeNull();
    expect(placementOrNull(null)).toBeNull();
    expect(placementOrNull({ role: 'manager' })).toEqual({ must: {}, mustNot: {}, role: 'manager' });
  });
});
