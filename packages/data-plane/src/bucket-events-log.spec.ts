import { Writable } from 'node:stream';
import pino from 'pino';
import { BucketEventsLog, describeBucketEvent, withBucketEvent, type BucketEventEntry } from './bucket-events-log';

const entry = (table: string, bucket: number, epoch: number, partition: string | null = null): BucketEventEntry => ({ table, partition, bucket, epoch });

describe('describeBucketEvent', () => {
  it.each([
    ['a bucket of a table', entry('orders', 3, 7), 'orders/3@7'],
    ['a bucket of a partition', entry('events', 0, 1, '2026-12-07'), 'events/2026-12-07/0@1'],
    ['a bucket taken over from a dead incarnation', { ...entry('orders', 3, 7), from: { node: '2', nodeEpoch: 1 } }, 'orders/3@7 from 2@1'],
  ])('names %s by table, partition, bucket and epoch', (_what, given, expected) => {
    expect(describeBucketEvent(given)).toBe(expected);
  });
});

describe('withBucketEvent', () => {
  it.each([
    ['the first event', undefined, 2, { buckets: 1, first: ['t/0@1'] }],
    ['one more while fewer than the most named are', { buckets: 1, first: ['t/9@1'] }, 2, { buckets: 2, first: ['t/9@1', 't/0@1'] }],
    ['one more once the most named are', { buckets: 2, first: ['t/8@1', 't/9@1'] }, 2, { buckets: 3, first: ['t/8@1', 't/9@1'] }],
    ['one more when none is named', { buckets: 4, first: [] }, 0, { buckets: 5, first: [] }],
  ])('counts %s', (_what, summary, namedMax, expected) => {
    expect(withBucketEvent(summary, entry('t', 0, 1), namedMax)).toEqual(expected);
  });

  it('leaves the summary it was given as it was', () => {
    const summary = { buckets: 1, first: ['t/9@1'] };
    withBucketEvent(summary, entry('t', 0, 1), 8);
    expect(summary).toEqual({ buckets: 1, first: ['t/9@1'] });
  });
});

describe('BucketEventsLog', () => {
  /** A pino logger at `level` whose lines land in the returned array, parsed. */
  function capturedLogger(level: string) {
    const lines: { level: number; msg: string; buckets?: number; first?: string[]; table?: string; deadNode?: string; deadNodeEpoch?: number }[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line));
        done();
      },
    });
    return { logger: pino({ level }, sink), lines };
  }

  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('writes one info line per kind per interval, with the count and the first buckets, instead of one per bucket', () => {
    const { logger, lines } = capturedLogger('info');
    const events = new BucketEventsLog(logger, 1_000, 2);
    for (let bucket = 0; bucket < 5; bucket++) events.note('opened', entry('orders', bucket, 4));
    events.note('closed', entry('orders', 9, 2));
    jest.advanceTimersByTime(999);
    expect(lines).toEqual([]);
    jest.advanceTimersByTime(1);
    expect(lines.map(({ msg, buckets, first }) => ({ msg, buckets, first }))).toEqual([
      { msg: 'buckets opened', buckets: 5, first: ['orders/0@4', 'orders/1@4'] },
      { msg: 'buckets closed', buckets: 1, first: ['orders/9@2'] },
    ]);
    expect(lines.every((line) => line.level === 30)).toBe(true);
    // Nothing more is pending: no line without events.
    jest.advanceTimersByTime(10_000);
    expect(lines).toHaveLength(2);
    events.note('opened', entry('orders', 7, 5));
    jest.advanceTimersByTime(1_000);
    expect(lines.slice(2).map(({ msg, buckets, first }) => ({ msg, buckets, first }))).toEqual([{ msg: 'buckets opened', buckets: 1, first: ['orders/7@5'] }]);
  });

  it('counts takeovers on a line of their own, naming the incarnation each bucket was taken from, and each at debug with it', () => {
    const { logger, lines } = capturedLogger('debug');
    const events = new BucketEventsLog(logger, 1_000, 1);
    events.note('taken over', { ...entry('orders', 3, 2), from: { node: '2', nodeEpoch: 1 } });
    events.note('taken over', { ...entry('orders', 4, 2), from: { node: '2', nodeEpoch: 1 } });
    events.note('opened', entry('orders', 3, 5));
    jest.advanceTimersByTime(1_000);
    expect(lines.filter((line) => line.level === 20).map(({ msg, table, deadNode, deadNodeEpoch }) => ({ msg, table, deadNode, deadNodeEpoch }))).toEqual([
      { msg: 'bucket taken over', table: 'orders', deadNode: '2', deadNodeEpoch: 1 },
      { msg: 'bucket taken over', table: 'orders', deadNode: '2', deadNodeEpoch: 1 },
      { msg: 'bucket opened', table: 'orders', deadNode: undefined, deadNodeEpoch: undefined },
    ]);
    expect(lines.filter((line) => line.level === 30).map(({ msg, buckets, first }) => ({ msg, buckets, first }))).toEqual([
      { msg: 'buckets taken over', buckets: 2, first: ['orders/3@2 from 2@1'] },
      { msg: 'buckets opened', buckets: 1, first: ['orders/3@5'] },
    ]);
  });

  it('writes what is pending at once when flushed (a node stopping), and each bucket at debug', () => {
    const { logger, lines } = capturedLogger('debug');
    const events = new BucketEventsLog(logger, 1_000);
    events.note('closed', entry('orders', 1, 3));
    expect(lines.map(({ level, msg, table }) => ({ level, msg, table }))).toEqual([{ level: 20, msg: 'bucket closed', table: 'orders' }]);
    events.flush();
    expect(lines.slice(1).map(({ msg, buckets }) => ({ msg, buckets }))).toEqual([{ msg: 'buckets closed', buckets: 1 }]);
    jest.advanceTimersByTime(5_000);
    expect(lines).toHaveLength(2);
  });
});
