import { KafkaError } from '@mink/kafka';
import { InvalidArgumentError } from '@mink/protocol';
import { Registry } from 'prom-client';
import type { TableRecord, View } from '@mink/meta';
import { DataNodeMetrics } from './node-metrics';
import { UNKNOWN_LABEL } from './request-figures';
import { shardedFrom } from '@mink/meta';

/** A view holding tables of these names and bucket counts: all DataNodeMetrics reads of one. */
function viewOf(buckets: Record<string, number>): () => Pick<View, 'tables'> {
  const tables = shardedFrom(Object.fromEntries(Object.entries(buckets).map(([name, count]) => [name, { name, buckets: count, partitions: [] } as unknown as TableRecord])));
  return () => ({ tables });
}

async function valueOf(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((each) => each.name === name);
  const values = (metric?.values ?? []) as { value: number; labels: Record<string, string | number>; metricName?: string }[];
  return values
    .filter((sample) => (sample.metricName ?? name) === name && Object.entries(labels).every(([key, value]) => String(sample.labels[key]) === value))
    .reduce((sum, sample) => sum + sample.value, 0);
}

describe('DataNodeMetrics', () => {
  it('counts an answered request with its rows and a refused one by its code without rows, and passes both through', async () => {
    const registry = new Registry();
    const metrics = new DataNodeMetrics(registry, viewOf({ users: 4, orders: 3 }));
    const put = { op: 'put', table: 'users', bucket: 1, rows: [{}, {}, {}] };
    await expect(metrics.track(put, async () => ({ written: 3 }))).resolves.toEqual({ written: 3 });
    const refused = new InvalidArgumentError('bad row');
    await expect(metrics.track(put, async () => Promise.reject(refused))).rejects.toBe(refused);
    expect(await valueOf(registry, 'mink_bucket_requests_total', { table: 'users', bucket: '1', op: 'put', outcome: 'ok' })).toBe(1);
    expect(await valueOf(registry, 'mink_bucket_requests_total', { op: 'put', outcome: 'InvalidArgument' })).toBe(1);
    expect(await valueOf(registry, 'mink_bucket_rows_total', { op: 'put' })).toBe(3);
    // Both are timed; status is not table data and counts nowhere.
    await metrics.track({ op: 'status' }, async () => ({}));
    const histogram = (await registry.getMetricsAsJSON()).find((each) => each.name === 'mink_bucket_request_seconds')!;
    const count = (histogram.values as { metricName?: string; value: number }[]).filter((sample) => sample.metricName === 'mink_bucket_request_seconds_count');
    expect(count.reduce((sum, sample) => sum + sample.value, 0)).toBe(2);
  });

  it('reports the Kafka group joins refused so far by the cap that refused them, as the group coordinator counts them', async () => {
    const registry = new Registry();
    const metrics = new DataNodeMetrics(registry, viewOf({ users: 4, orders: 3 }));
    expect(await valueOf(registry, 'mink_kafka_group_joins_refused', { cap: 'group' })).toBe(0);
    let refusals = { groupFull: 2, coordinatorFull: 1, lastGroupId: 'readers' as string | null };
    metrics.readGroupJoinRefusalsFrom(() => refusals);
    expect(await valueOf(registry, 'mink_kafka_group_joins_refused', { cap: 'group' })).toBe(2);
    expect(await valueOf(registry, 'mink_kafka_group_joins_refused', { cap: 'coordinator' })).toBe(1);
    refusals = { ...refusals, groupFull: 5 };
    expect(await valueOf(registry, 'mink_kafka_group_joins_refused', { cap: 'group' })).toBe(5);
    // The caller's group id is never a label.
    expect(await registry.metrics()).not.toContain('readers');
  });

  it('records WAL uploads and commits by outcome, object sizes of stored ones, and the queued bytes of the current writer', async () => {
    const registry = new Registry();
    const metrics = new DataNodeMetrics(registry, viewOf({ users: 4, orders: 3 }));
    metrics.wal.uploaded(100_000, 0.02, true);
    metrics.wal.uploaded(50_000, 0.5, false);
    metrics.wal.committed(0.003, null);
    metrics.wal.committed(0.004, 'Fenced');
    let queued = 4096;
    metrics.readQueuedBytesFrom(() => queued);
    const json = await registry.getMetricsAsJSON();
    const countOf = (name: string, labels: Record<string, string> = {}) =>
      ((json.find((each) => each.name === name)?.values ?? []) as { metricName?: string; value: number; labels: Record<string, string> }[])
        .filter((sample) => sample.metricName === `${name}_count` && Object.entries(labels).every(([key, value]) => sample.labels[key] === value))
        .reduce((sum, sample) => sum + sample.value, 0);
    expect(countOf('mink_wal_upload_seconds', { outcome: 'ok' })).toBe(1);
    expect(countOf('mink_wal_upload_seconds', { outcome: 'failed' })).toBe(1);
    expect(countOf('mink_wal_object_bytes')).toBe(1);
    expect(countOf('mink_wal_commit_seconds', { outcome: 'Fenced' })).toBe(1);
    expect(await valueOf(registry, 'mink_wal_queued_bytes')).toBe(4096);
    queued = 0;
    expect(await valueOf(registry, 'mink_wal_queued_bytes')).toBe(0);
  });
});

describe('DataNodeMetrics cache gauges', () => {
  it('shows what each cache holds and its bound, as the node reads them when scraped', async () => {
    // Proves a scrape tells where a data node's memory goes: each cache's bytes beside its bound, read afresh.
    const registry = new Registry();
    const metrics = new DataNodeMetrics(registry, viewOf({}));
    let tail = 1_000;
    metrics.readCacheSizesFrom(() => [
      { cache: 'stream_tail', bytes: tail, bytesMax: 128 },
      { cache: 'lake_files', bytes: 0, bytesMax: 64 },
    ]);
    expect(await valueOf(registry, 'mink_cache_bytes', { cache: 'stream_tail' })).toBe(1_000);
    expect(await valueOf(registry, 'mink_cache_bytes_max', { cache: 'lake_files' })).toBe(64);
    tail = 10;
    expect(await valueOf(registry, 'mink_cache_bytes', { cache: 'stream_tail' })).toBe(10);
  });
});

describe('DataNodeMetrics.pk', () => {
  it('records the requests and operations of each group commit of a PK bucket', async () => {
    const registry = new Registry();
    const metrics = new DataNodeMetrics(registry, viewOf({ users: 4, orders: 3 }));
    metrics.pk.groupStarted!(1, 125);
    metrics.pk.groupStarted!(3, 375);
    const json = await registry.getMetricsAsJSON();
    const sampleOf = (name: string, sample: string, le?: number) =>
      ((json.find((each) => each.name === name)?.values ?? []) as { metricName?: string; value: number; labels: Record<string, string | number> }[])
        .filter((each) => each.metricName === `${name}_${sample}` && (le === undefined || each.labels.le === le))
        .reduce((sum, each) => sum + each.value, 0);
    expect(sampleOf('mink_pk_group_requests', 'count')).toBe(2);
    expect(sampleOf('mink_pk_group_requests', 'sum')).toBe(4);
    expect(sampleOf('mink_pk_group_requests', 'bucket', 2)).toBe(1);
    expect(sampleOf('mink_pk_group_operations', 'sum')).toBe(500);
    expect(sampleOf('mink_pk_group_operations', 'bucket', 100)).toBe(0);
    expect(sampleOf('mink_pk_group_operations', 'bucket', 1_000)).toBe(2);
  });
});

describe('DataNodeMetrics.trackWith', () => {
  it('counts an operation with the figures of its result, and a Kafka error by its code', async () => {
    const registry = new Registry();
    const metrics = new DataNodeMetrics(registry, viewOf({ users: 4, orders: 3 }));
    const figures = (result: { records: number } | undefined) => ({ table: 'orders', partition: null, bucket: 2, op: 'kafkaProduce', rows: result?.records ?? 0, bytes: 0 });
    await metrics.trackWith(figures, async () => ({ records: 7 }));
    const kafkaError = new KafkaError(6, 'not the leader');
    await expect(metrics.trackWith(figures, async () => Promise.reject(kafkaError))).rejects.toBe(kafkaError);
    expect(await valueOf(registry, 'mink_bucket_rows_total', { table: 'orders', bucket: '2', op: 'kafkaProduce' })).toBe(7);
    expect(await valueOf(registry, 'mink_bucket_requests_total', { op: 'kafkaProduce', outcome: 'kafka_6' })).toBe(1);
  });
});

describe('DataNodeMetrics labels', () => {
  it('labels requests for tables, buckets and Kafka topics the view does not hold as unknown, so callers cannot add series', async () => {
    // Proves the labels of refused requests are bounded by the view: a thousand made-up table names and a
    // thousand made-up Kafka topics and partitions add one series, while a real table keeps its own labels.
    const registry = new Registry();
    const metrics = new DataNodeMetrics(registry, viewOf({ users: 4 }));
    const notFound = new InvalidArgumentError('no such table');
    for (let index = 0; index < 1_000; index++) {
      await metrics.track({ op: 'scan', table: `made-up-${index}`, bucket: index }, async () => Promise.reject(notFound)).catch(() => undefined);
      const topic = (result: unknown) => ({ table: `topic-${index}`, partition: null, bucket: index, op: 'kafkaFetch', rows: result ? 1 : 0, bytes: 0 });
      await metrics.trackWith(topic, async () => Promise.reject(new KafkaError(3, 'unknown topic'))).catch(() => undefined);
    }
    await metrics.track({ op: 'scan', table: 'users', bucket: 9 }, async () => Promise.reject(notFound)).catch(() => undefined);
    await metrics.track({ op: 'lookup', table: 'users', bucket: 1, keys: [{}] }, async () => ({ rows: [null] }));
    const samples = (await registry.getMetricsAsJSON()).find((each) => each.name === 'mink_bucket_requests_total')!.values as { labels: Record<string, string>; value: number }[];
    expect(samples.map((sample) => [sample.labels.table, sample.labels.bucket, sample.labels.op, sample.labels.outcome, sample.value]).sort()).toEqual(
      [
        [UNKNOWN_LABEL, UNKNOWN_LABEL, 'scan', 'InvalidArgument', 1_000],
        [UNKNOWN_LABEL, UNKNOWN_LABEL, 'kafkaFetch', 'kafka_3', 1_000],
        ['users', UNKNOWN_LABEL, 'scan', 'InvalidArgument', 1],
        ['users', '1', 'lookup', 'ok', 1],
      ].sort(),
    );
    expect(await registry.metrics()).not.toMatch(/made-up|topic-/);
  });
});
