import { bucketRequestsInExposition, requestsBetween } from './bucket-requests';

const EXPOSITION = [
  '# HELP mink_bucket_requests_total Requests for table data this node answered',
  '# TYPE mink_bucket_requests_total counter',
  'mink_bucket_requests_total{table="events",bucket="0",op="append",outcome="ok",role="data-node"} 12',
  'mink_bucket_requests_total{table="events",bucket="1",op="append",outcome="ok",role="data-node"} 30',
  'mink_bucket_requests_total{table="events",bucket="1",op="append",outcome="NotLeader",role="data-node"} 2',
  'mink_bucket_requests_total{table="events",bucket="1",op="scan",outcome="ok",role="data-node"} 7',
  'mink_bucket_requests_total{table="events_pk",bucket="0",op="append",outcome="ok",role="data-node"} 100',
  'mink_bucket_rows_total{table="events",bucket="0",op="append",role="data-node"} 5000',
  'mink_bucket_requests_total{table="events",bucket="2",op="append",outcome="ok",role="data-node"} not-a-number',
].join('\n');

describe('bucketRequestsInExposition', () => {
  it.each([
    ['every bucket and outcome of the table and op', 'events', 'append', 44],
    ['another op of the table', 'events', 'scan', 7],
    ['a table whose name starts like another', 'events_pk', 'append', 100],
    ['a table without samples', 'other', 'append', 0],
  ])('%s', (_, table, op, expected) => {
    expect(bucketRequestsInExposition(EXPOSITION, table, op)).toBe(expected);
  });

  it('reads label values with escaped quotes, and labels in any order', () => {
    const text = 'mink_bucket_requests_total{op="put",outcome="Unavailable",bucket="3",table="a\\"b"} 4\n';
    expect(bucketRequestsInExposition(text, 'a"b', 'put')).toBe(4);
  });

  it('counts nothing in an empty exposition', () => {
    expect(bucketRequestsInExposition('', 'events', 'append')).toBe(0);
  });
});

describe('requestsBetween', () => {
  it.each([
    [10, 25, 15],
    [10, 10, 0],
    [null, 25, null],
    [10, null, null],
    [30, 5, null],
  ])('before %p, after %p: %p', (before, after, expected) => {
    expect(requestsBetween(before, after)).toBe(expected);
  });
});
