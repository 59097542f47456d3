import { decideAdmission, type AdmissionInput } from './admission';

const BASE: AdmissionInput = { inFlight: 0, inFlightMax: 16, appliedSeq: 5_000, memberAppliedSeqs: [5_000, 4_990], memberLagEntriesMax: 2_000, retryAfterMs: 1_000 };

describe('decideAdmission lets the control plane take work only as fast as the processes apply it', () => {
  const cases: [description: string, input: Partial<AdmissionInput>, expected: ReturnType<typeof decideAdmission>][] = [
    ['an idle coordinator with nodes caught up admits', {}, { admit: true }],
    ['one slot left admits', { inFlight: 15 }, { admit: true }],
    ['every slot taken refuses with Retry-After', { inFlight: 16 }, { admit: false, reason: '16 coordinator actions are in flight (at most 16)', retryAfterMs: 1_000 }],
    ['a node exactly at the lag bound admits', { memberAppliedSeqs: [3_000, 5_000] }, { admit: true }],
    ['a node past the lag bound refuses', { memberAppliedSeqs: [2_999, 5_000] }, { admit: false, reason: 'a data node is 2001 metadata log entries behind (at most 2000 before new actions wait)', retryAfterMs: 1_000 }],
    ['no live node reporting progress admits (the create itself reports no live node)', { memberAppliedSeqs: [] }, { admit: true }],
    ['a node ahead of this coordinator (it applied entries this one has not yet) admits', { memberAppliedSeqs: [5_100] }, { admit: true }],
  ];

  it.each(cases)('%s', (_description, input, expected) => {
    expect(decideAdmission({ ...BASE, ...input })).toEqual(expected);
  });
});
