import { claimOrdinal, claimsToDrain, drainJobName } from '../../src/usage-spool/spool-sweeper';

const set = 'gw-inference-gateway-ingress';
const claim = (ordinal: number | string) => `usage-spool-${set}-${ordinal}`;

describe('claimsToDrain', () => {
  it('drains the claims of ordinals the StatefulSet no longer runs, once each', () => {
    const drains = claimsToDrain({
      statefulSet: set,
      replicas: 1,
      claims: [claim(0), claim(1), claim(2), claim(3)],
      pods: [`${set}-0`],
      jobs: [drainJobName(set, 3)],
    });
    expect(drains).toEqual([
      { claim: claim(1), ordinal: 1, job: `${set}-spool-drain-1` },
      { claim: claim(2), ordinal: 2, job: `${set}-spool-drain-2` },
    ]);
  });

  it('leaves a claim whose pod still exists (terminating, or back after a scale-up)', () => {
    expect(
      claimsToDrain({ statefulSet: set, replicas: 1, claims: [claim(1)], pods: [`${set}-0`, `${set}-1`], jobs: [] }),
    ).toEqual([]);
    expect(claimsToDrain({ statefulSet: set, replicas: 3, claims: [claim(2)], pods: [], jobs: [] })).toEqual([]);
  });

  it("ignores other claims, another set's and malformed ordinals", () => {
    expect(claimOrdinal(set, claim(12))).toBe(12);
    for (const other of [claim('01'), claim('x'), `usage-spool-${set}-other-1`, `data-${set}-1`]) {
      expect(claimOrdinal(set, other)).toBeUndefined();
    }
    expect(
      claimsToDrain({
        statefulSet: set,
        replicas: 0,
        claims: [claim('1a'), 'usage-spool-other-1'],
        pods: [],
        jobs: [],
      }),
    ).toEqual([]);
  });
});
