import type { ColumnSpec, PkOptions } from '@mink/meta';
import { InvalidArgumentError } from '@mink/protocol';
import type { Row } from '@mink/records';

import type { PkOperation } from './batch';
import type { ChangeRecord } from './changelog';
import { insertBatchesOf, nextGroupCommitStep, operationsOfParts, partOutcomesOf, planGroup, rangesOfRequests, type GroupCommitLimits, type GroupCommitState, type GroupCommitStep, type GroupPlan } from './group-commit';
import { keyText, primaryKeyBytes } from './keys';

describe('nextGroupCommitStep', () => {
  const limits: GroupCommitLimits = { groupsInFlightMax: 4, groupOperationsMax: 8, groupOperationsPipelined: 3 };
  /** A queue of requests holding these numbers of operations. */
  const queueOf = (...counts: number[]) => counts.map((count) => ({ operations: new Array<unknown>(count).fill(null) }));
  const ready: GroupCommitState = { closed: false, catchingUp: false, mustCatchUp: false, groupsInFlight: 0, queued: queueOf(1) };

  it.each<[string, Partial<GroupCommitState>, GroupCommitStep]>([
    ['nothing queued: idle', { queued: [] }, { step: 'idle' }],
    ['a closed bucket starts nothing', { closed: true }, { step: 'idle' }],
    ['a catch-up running starts nothing', { catchingUp: true }, { step: 'idle' }],
    ['a catch-up running after a failure starts no second one', { catchingUp: true, mustCatchUp: true }, { step: 'idle' }],
    ['after a failure, groups in flight are waited for', { mustCatchUp: true, groupsInFlight: 2 }, { step: 'idle' }],
    ['after a failure, with none in flight: catch up', { mustCatchUp: true }, { step: 'catchUp' }],
    ['after a failure, with nothing queued: idle (the next write catches up)', { mustCatchUp: true, queued: [] }, { step: 'idle' }],
    ['a closed bucket that must catch up does not', { mustCatchUp: true, closed: true }, { step: 'idle' }],
    ['groupsInFlightMax groups in the WAL: wait for one to settle', { groupsInFlight: 4 }, { step: 'idle' }],
    ['fewer in flight and groupOperationsPipelined queued: start a group', { groupsInFlight: 3, queued: queueOf(3) }, { step: 'startGroup', requests: 1 }],
    ['none in flight: even one operation starts a group at once', { groupsInFlight: 0, queued: queueOf(1) }, { step: 'startGroup', requests: 1 }],
    ['one in flight and fewer than groupOperationsPipelined queued: they wait for it', { groupsInFlight: 1, queued: queueOf(1, 1) }, { step: 'idle' }],
    ['one in flight: requests that together reach groupOperationsPipelined go', { groupsInFlight: 1, queued: queueOf(1, 1, 1) }, { step: 'startGroup', requests: 3 }],
    ['one in flight: one large request goes, and takes what fits behind it', { groupsInFlight: 1, queued: queueOf(6, 1, 5) }, { step: 'startGroup', requests: 2 }],
    ['groupsInFlightMax in flight: even a large request waits', { groupsInFlight: 4, queued: queueOf(8) }, { step: 'idle' }],
    ['after a failure with none in flight, a small queue catches up (no pipelining rule)', { mustCatchUp: true, queued: queueOf(1) }, { step: 'catchUp' }],
    ['the requests queued that fit go together', { queued: queueOf(1, 2, 3) }, { step: 'startGroup', requests: 3 }],
    ['a group may hold exactly groupOperationsMax', { queued: queueOf(3, 5, 1) }, { step: 'startGroup', requests: 2 }],
    ['the request that would overflow the group waits for the next', { queued: queueOf(3, 4, 5) }, { step: 'startGroup', requests: 2 }],
    ['a request above groupOperationsMax goes alone, never split', { queued: queueOf(12, 1) }, { step: 'startGroup', requests: 1 }],
    ['requests keep their order: none after an overflowing one is taken', { queued: queueOf(1, 12, 1) }, { step: 'startGroup', requests: 1 }],
    ['requests without operations ride along', { queued: queueOf(8, 0, 0, 1) }, { step: 'startGroup', requests: 3 }],
  ])('%s', (_name, change, expected) => {
    // Proves each branch of the queue's decision: when a group starts, how many requests it takes, and when the tablet catches up.
    expect(nextGroupCommitStep({ ...ready, ...change }, limits)).toEqual(expected);
  });
});

describe('planGroup', () => {
  const columns: ColumnSpec[] = [
    { name: 'id', type: 'int64' },
    { name: 'name', type: 'string' },
    { name: 'version', type: 'int64' },
  ];
  const table = { columns, primaryKey: ['id'], bucketKey: [] as string[] };
  const lastWriteWins: PkOptions = { mergeEngine: 'last_write_wins', deleteBehavior: 'allow' };
  const firstRow: PkOptions = { mergeEngine: 'first_row', deleteBehavior: 'ignore' };
  const versioned: PkOptions = { mergeEngine: 'versioned', versionColumn: 'version', deleteBehavior: 'disable' };

  const row = (id: bigint, name: string | null, version: bigint | null = 1n): Row => ({ id, name, version });
  const key = (id: bigint): string => keyText(primaryKeyBytes({ id }, ['id']));
  const put = (value: Row, partialColumns?: string[]): PkOperation => (partialColumns ? { kind: 'put', row: value, partialColumns } : { kind: 'put', row: value });
  const remove = (id: bigint): PkOperation => ({ kind: 'delete', key: { id } });
  const insert = (value: Row): ChangeRecord => ({ changeType: '+I', row: value });
  const update = (before: Row, after: Row): ChangeRecord[] => [
    { changeType: '-U', row: before },
    { changeType: '+U', row: after },
  ];
  const deletion = (value: Row): ChangeRecord => ({ changeType: '-D', row: value });

  /** A plan with key texts checked against the keys and errors as their messages, so expectations compare data. */
  type Readable = { requests: ({ changes: ChangeRecord[]; writes: [string, Row | null][] } | { refused: string })[]; changes: ChangeRecord[] };
  function readable(plan: GroupPlan): Readable {
    return {
      requests: plan.requests.map((request) => {
        if (!request.planned) return { refused: (request.error as Error).message };
        for (const write of request.writes) expect(write.text).toBe(keyText(write.key));
        return { changes: request.changes, writes: request.writes.map((write): [string, Row | null] => [write.text, write.row]) };
      }),
      changes: plan.changes,
    };
  }

  /** A lookup over `stored` that throws for the keys in `failing`. */
  function lookupOf(stored: Row[], failing: bigint[] = []): (bytes: Uint8Array, text: string) => Row | undefined {
    const rows = new Map(stored.map((each) => [key(each.id as bigint), each]));
    const broken = new Set(failing.map(key));
    return (bytes, text) => {
      expect(text).toBe(keyText(bytes));
      if (broken.has(text)) throw new Error(`stored row of ${text} does not decode`);
      return rows.get(text);
    };
  }

  it.each<[string, PkOptions, Row[], bigint[], PkOperation[][], Readable]>([
    ['an empty group plans nothing', lastWriteWins, [], [], [], { requests: [], changes: [] }],
    [
      'a later request sees the put of an earlier one, not the stored row',
      lastWriteWins,
      [row(1n, 'stored')],
      [],
      [[put(row(1n, 'a'))], [put(row(1n, 'b'))]],
      {
        requests: [
          { changes: update(row(1n, 'stored'), row(1n, 'a')), writes: [[key(1n), row(1n, 'a')]] },
          { changes: update(row(1n, 'a'), row(1n, 'b')), writes: [[key(1n), row(1n, 'b')]] },
        ],
        changes: [...update(row(1n, 'stored'), row(1n, 'a')), ...update(row(1n, 'a'), row(1n, 'b'))],
      },
    ],
    [
      'a later request sees the delete of an earlier one: the key is new again',
      lastWriteWins,
      [row(1n, 'stored')],
      [],
      [[remove(1n)], [put(row(1n, 'again'))]],
      {
        requests: [
          { changes: [deletion(row(1n, 'stored'))], writes: [[key(1n), null]] },
          { changes: [insert(row(1n, 'again'))], writes: [[key(1n), row(1n, 'again')]] },
        ],
        changes: [deletion(row(1n, 'stored')), insert(row(1n, 'again'))],
      },
    ],
    [
      'a partial put merges with the row an earlier request of the group put',
      lastWriteWins,
      [],
      [],
      [[put(row(1n, 'one', 1n))], [put({ id: 1n, version: 5n }, ['id', 'version'])]],
      {
        requests: [
          { changes: [insert(row(1n, 'one', 1n))], writes: [[key(1n), row(1n, 'one', 1n)]] },
          { changes: update(row(1n, 'one', 1n), row(1n, 'one', 5n)), writes: [[key(1n), row(1n, 'one', 5n)]] },
        ],
        changes: [insert(row(1n, 'one', 1n)), ...update(row(1n, 'one', 1n), row(1n, 'one', 5n))],
      },
    ],
    [
      'a bad request is refused alone, and a later request does not see what it would have written',
      lastWriteWins,
      [],
      [],
      [[put(row(2n, 'x')), put({ name: 'no key' }, ['name'])], [put(row(2n, 'y'))]],
      {
        requests: [{ refused: "operation 1: a partial put must set every primary key column; 'id' is missing" }, { changes: [insert(row(2n, 'y'))], writes: [[key(2n), row(2n, 'y')]] }],
        changes: [insert(row(2n, 'y'))],
      },
    ],
    [
      'a request whose lookup throws is refused with what it threw; the others go on',
      lastWriteWins,
      [],
      [3n],
      [[put(row(1n, 'a'))], [put(row(3n, 'c'))], [put(row(1n, 'b'))]],
      {
        requests: [
          { changes: [insert(row(1n, 'a'))], writes: [[key(1n), row(1n, 'a')]] },
          { refused: `stored row of ${key(3n)} does not decode` },
          { changes: update(row(1n, 'a'), row(1n, 'b')), writes: [[key(1n), row(1n, 'b')]] },
        ],
        changes: [insert(row(1n, 'a')), ...update(row(1n, 'a'), row(1n, 'b'))],
      },
    ],
    [
      'first_row: a request that changes nothing is planned with no changes and no writes',
      firstRow,
      [row(1n, 'first')],
      [],
      [[put(row(1n, 'second'))], [put(row(2n, 'new'))]],
      {
        requests: [
          { changes: [], writes: [] },
          { changes: [insert(row(2n, 'new'))], writes: [[key(2n), row(2n, 'new')]] },
        ],
        changes: [insert(row(2n, 'new'))],
      },
    ],
    [
      'versioned: a lower version after an earlier request of the group changes nothing',
      versioned,
      [],
      [],
      [[put(row(1n, 'v5', 5n))], [put(row(1n, 'v3', 3n))], [put(row(1n, 'v5 again', 5n))]],
      {
        requests: [
          { changes: [insert(row(1n, 'v5', 5n))], writes: [[key(1n), row(1n, 'v5', 5n)]] },
          { changes: [], writes: [] },
          { changes: update(row(1n, 'v5', 5n), row(1n, 'v5 again', 5n)), writes: [[key(1n), row(1n, 'v5 again', 5n)]] },
        ],
        changes: [insert(row(1n, 'v5', 5n)), ...update(row(1n, 'v5', 5n), row(1n, 'v5 again', 5n))],
      },
    ],
    [
      'versioned with deletes disabled: the delete is refused, the put beside it in another request is planned',
      versioned,
      [row(1n, 'stored', 1n)],
      [],
      [[remove(1n)], [put(row(1n, 'v2', 2n))]],
      {
        requests: [{ refused: 'operation 0: deletes are disabled for this table' }, { changes: update(row(1n, 'stored', 1n), row(1n, 'v2', 2n)), writes: [[key(1n), row(1n, 'v2', 2n)]] }],
        changes: update(row(1n, 'stored', 1n), row(1n, 'v2', 2n)),
      },
    ],
  ])('%s', (_name, options, stored, failing, requests, expected) => {
    // Proves a group plans its requests one after another on the state they leave, and refuses a bad one on its own.
    expect(readable(planGroup(options, table, lookupOf(stored, failing), requests))).toEqual(expected);
  });

  it('asks the caller only for keys no earlier request of the group wrote', () => {
    // Proves the group's own writes shadow the tablet and the groups in flight (the caller's lookup).
    const asked: string[] = [];
    const lookup = (_bytes: Uint8Array, text: string): Row | undefined => {
      asked.push(text);
      return undefined;
    };
    planGroup(lastWriteWins, table, lookup, [[put(row(1n, 'a'))], [put(row(1n, 'b')), put(row(2n, 'c'))], [remove(2n), remove(3n)]]);
    expect(asked).toEqual([key(1n), key(2n), key(3n)]);
  });

  it('refuses a request with InvalidArgumentError for bad input, keeping the error as thrown', () => {
    // Proves the bucket can hand the refusal to the client unchanged (its wire code comes from its class).
    const plan = planGroup(versioned, table, lookupOf([]), [[put(row(1n, 'no version', null))]]);
    expect(plan.requests[0]).toEqual({ planned: false, error: expect.any(InvalidArgumentError) });
  });
});

describe('rangesOfRequests', () => {
  it.each<[string, number[], number, { baseOffset: number; count: number }[]]>([
    ['no request takes nothing', [], 4, []],
    ['one request takes its records from the start', [3], 10, [{ baseOffset: 10, count: 3 }]],
    [
      'each request follows the ones before it',
      [2, 1, 3],
      5,
      [
        { baseOffset: 5, count: 2 },
        { baseOffset: 7, count: 1 },
        { baseOffset: 8, count: 3 },
      ],
    ],
    [
      'a request that changed nothing is answered with the next offset',
      [2, 0, 1],
      0,
      [
        { baseOffset: 0, count: 2 },
        { baseOffset: 2, count: 0 },
        { baseOffset: 2, count: 1 },
      ],
    ],
    [
      'a group that changed nothing answers every request at the start',
      [0, 0],
      9,
      [
        { baseOffset: 9, count: 0 },
        { baseOffset: 9, count: 0 },
      ],
    ],
  ])('%s', (_name, counts, startOffset, expected) => {
    // Proves the offsets each acknowledged request is answered with.
    expect(rangesOfRequests(counts, startOffset)).toEqual(expected);
  });
});

describe('insertBatchesOf', () => {
  const insert = (id: number): ChangeRecord => ({ changeType: '+I', row: { id: BigInt(id) } });
  const request = (operations: number, changes: ChangeRecord[], inserts?: string[]) => ({ operations, changes, ...(inserts ? { inserts } : {}) });

  it.each<[string, ReturnType<typeof request>[], string[] | null]>([
    ['one request of new keys: its batches', [request(2, [insert(1), insert(2)], ['a'])], ['a']],
    ['several such requests: their batches in queue order', [request(1, [insert(1)], ['a']), request(3, [insert(2), insert(3), insert(4)], ['b', 'c'])], ['a', 'b', 'c']],
    ['a request without batches (JSON rows, a partial put)', [request(1, [insert(1)], ['a']), request(1, [insert(2)])], null],
    ['an update (-U, +U)', [request(1, [{ changeType: '-U', row: {} }, { changeType: '+U', row: {} }], ['a'])], null],
    ['a delete', [request(1, [{ changeType: '-D', row: {} }], ['a'])], null],
    ['a put that left its key as it was (no change)', [request(2, [insert(1)], ['a'])], null],
    ['nothing planned', [], null],
  ])('%s', (_name, planned, expected) => {
    // Proves the changelog is built from the incoming columns only when its records are exactly the rows sent, in order.
    expect(insertBatchesOf(planned)).toEqual(expected);
  });
});

describe('operationsOfParts', () => {
  it.each([
    [[1, 2, 3, 4, 5], [2, 3], [[1, 2], [3, 4, 5]]],
    [[1, 2, 3], [3], [[1, 2, 3]]],
    [[1, 2, 3], [1, 1, 1], [[1], [2], [3]]],
  ])('%j in parts of %j', (operations, counts, expected) => {
    expect(operationsOfParts(operations, counts)).toEqual(expected);
  });

  it.each([
    [[1, 2, 3], [2], 'parts add up to 2 operations, the request holds 3'],
    [[1, 2, 3], [2, 2], 'parts add up to 4 operations, the request holds 3'],
    [[1, 2, 3], [0, 3], 'parts must be positive integers, got [0, 3]'],
    [[1, 2, 3], [1.5, 1.5], 'parts must be positive integers, got [1.5, 1.5]'],
    [[1, 2, 3], [], 'parts must be positive integers, got []'],
  ])('refuses %j in parts of %j', (operations, counts, message) => {
    expect(() => operationsOfParts(operations, counts)).toThrow(new InvalidArgumentError(message));
  });
});

describe('partOutcomesOf', () => {
  const refused = new InvalidArgumentError('operation 0: deletes are disabled for this table');
  it.each([
    ['parts follow each other from the base offset', [{ planned: true, operations: 2, changes: 2 }, { planned: true, operations: 3, changes: 4 }], 10, [{ operations: 2, baseOffset: 10, count: 2 }, { operations: 3, baseOffset: 12, count: 4 }]],
    ['a part that changed nothing answers where the next record goes', [{ planned: true, operations: 1, changes: 0 }, { planned: true, operations: 1, changes: 1 }], 5, [{ operations: 1, baseOffset: 5, count: 0 }, { operations: 1, baseOffset: 5, count: 1 }]],
    ['a refused part keeps its error and takes no offsets', [{ planned: true, operations: 1, changes: 1 }, { planned: false, error: refused }, { planned: true, operations: 2, changes: 2 }], 0, [{ operations: 1, baseOffset: 0, count: 1 }, { error: refused }, { operations: 2, baseOffset: 1, count: 2 }]],
  ] as const)('%s', (_, parts, baseOffset, expected) => {
    expect(partOutcomesOf(parts as never, baseOffset)).toEqual(expected);
  });
});
