/**
 * librdkafka (kcat, installed by scripts/bootstrap.sh) as a second, independent Kafka client of both
 * conversions, through mink's own broker handlers and listener over an in-memory backend: the batches
 * librdkafka produces with each codec read as the rows of a table, and the rows of a PK table's changelog
 * read by librdkafka as a topic.
 */
import { execFile } from 'node:child_process';
import { type ColumnSpec, KAFKA_TOPIC_COLUMNS } from '@mink/meta';
import { type ChangeType, type Row, decodeBatch, encodeBatch } from '@mink/records';

import type { FetchedPartition, KafkaBackend, KafkaBrokerAddress, KafkaTopicInfo, ProducedBatch, ProduceResult } from '../broker/backend';
import { kafkaBroker } from '../broker/kafka-broker';
import { readRecordBatch, setBaseOffset } from '../messages/record-batch';
import { KafkaListener } from '../server/kafka-listener';
import { CHANGE_TYPE_HEADER, recordBatchOfStoredRows } from './record-batch-of-stored-rows';
import { storedRowsOfRecordBatch } from './stored-rows-of-record-batch';

const KCAT_TIMEOUT_MS = 30_000;
// A kcat run starts a process and connects; on a loaded machine that can pass Jest's default 5 s.
jest.setTimeout(KCAT_TIMEOUT_MS + 5_000);

/** A partition's log: stored batches with their base offsets, as a stream holds them. */
interface PartitionLog {
  batches: Uint8Array[];
  endOffset: number;
}

/**
 * The part of KafkaBackend a single-broker produce and fetch drive, over one partition per topic; any
 * other method throws, so a call the test did not expect fails it.
 */
function inMemoryBackend(self: () => KafkaBrokerAddress, logs: Map<string, PartitionLog>): KafkaBackend {
  const logOf = (topic: string, partition: number): PartitionLog => {
    const log = logs.get(topic);
    if (log === undefined || partition !== 0) throw new Error(`unexpected partition ${topic}-${partition}`);
    return log;
  };
  const topicInfo = (name: string): KafkaTopicInfo => ({ name, partitions: [{ partition: 0, leader: self(), leaderEpoch: 0 }], configs: {} });
  const implemented: Partial<KafkaBackend> = {
    clusterId: 'mink-tables-spec',
    get self() {
      return self();
    },
    brokers: () => [self()],
    controllerId: () => self().nodeId,
    topics: () => [...logs.keys()].map(topicInfo),
    topic: (name) => (logs.has(name) ? topicInfo(name) : null),
    produce: async (topic: string, partition: number, batches: ProducedBatch[]): Promise<ProduceResult> => {
      const log = logOf(topic, partition);
      const baseOffset = log.endOffset;
      for (const batch of batches) {
        const bytes = Uint8Array.from(batch.bytes);
        setBaseOffset(bytes, log.endOffset);
        log.batches.push(bytes);
        log.endOffset += batch.offsetCount;
      }
      return { baseOffset, logStartOffset: 0 };
    },
    fetch: async (topic: string, partition: number, offset: number): Promise<FetchedPartition> => {
      const log = logOf(topic, partition);
      const batches = log.batches.filter((batch) => {
        const view = readRecordBatch(batch);
        return view.baseOffset + view.recordCount > offset;
      });
      return { batches, highWatermark: log.endOffset, lastStableOffset: log.endOffset, logStartOffset: 0, abortedTransactions: [] };
    },
    waitForData: (_partitions, deadlineMs) => new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.min(deadlineMs - Date.now(), 100)))),
    listOffset: async (topic: string, partition: number, timestamp: number) => {
      const log = logOf(topic, partition);
      if (timestamp === -2) return { offset: 0, timestamp: -1 };
      if (timestamp === -1) return { offset: log.endOffset, timestamp: -1 };
      throw new Error(`unexpected ListOffsets by timestamp ${timestamp}`);
    },
  };
  return new Proxy(implemented as KafkaBackend, {
    get(target, property, receiver) {
      if (property in target) return Reflect.get(target, property, receiver);
      if (typeof property === 'symbol' || property === 'then') return undefined;
      throw new Error(`the in-memory backend does not implement '${property}'`);
    },
  });
}

function kcat(args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile('kcat', args, { timeout: KCAT_TIMEOUT_MS }, (error, stdout, stderr) => (error ? reject(new Error(`kcat ${args.join(' ')}: ${String(error)}\n${stderr}`)) : resolve(stdout)));
    child.stdin!.end(input ?? '');
  });
}

let listener: KafkaListener;
let broker: string;
const logs = new Map<string, PartitionLog>();

beforeAll(async () => {
  let port = 0;
  const backend = inMemoryBackend(() => ({ nodeId: 1, host: '127.0.0.1', port }), logs);
  listener = new KafkaListener({ host: '127.0.0.1', port: 0, handler: kafkaBroker(backend), logger: { info: () => undefined, warn: () => undefined } });
  port = await listener.start();
  broker = `127.0.0.1:${port}`;
});

afterAll(async () => {
  await listener.stop();
});

describe('what librdkafka produces, read as rows', () => {
  it.each(['none', 'gzip', 'snappy', 'lz4', 'zstd'])('%s: every record a row with its key, value, headers and timestamp', async (codec) => {
    const topic = `produced-${codec}`;
    logs.set(topic, { batches: [], endOffset: 0 });
    // Every record compresses well even alone: librdkafka sends a batch uncompressed when the codec does not
    // shrink it, which a batch of the first short record alone (linger cut short on a loaded machine) did not.
    const lines = Array.from({ length: 50 }, (_, index) => `key-${index}:${codec} value ${index} ${'x'.repeat(200 + index * 3)}`);
    const before = Date.now();
    await kcat(['-b', broker, '-P', '-t', topic, '-p', '0', '-z', codec, '-K', ':', '-H', 'origin=kcat', '-H', 'origin=twice', '-X', 'linger.ms=50'], `${lines.join('\n')}\n`);
    const after = Date.now();

    const log = logs.get(topic)!;
    expect(log.batches.length).toBeGreaterThan(0);
    const rows: Row[] = [];
    const timestamps: number[] = [];
    let nextOffset = 0;
    for (const batch of log.batches) {
      expect(readRecordBatch(batch).compression).toBe(codec);
      const stored = storedRowsOfRecordBatch(batch);
      expect(stored.startOffset).toBe(nextOffset);
      nextOffset += stored.recordCount;
      const decoded = decodeBatch(
        KAFKA_TOPIC_COLUMNS.map((column) => ({ ...column })),
        stored.payload,
      );
      rows.push(...decoded.rows);
      timestamps.push(...decoded.timestampsMs);
    }
    expect(nextOffset).toBe(lines.length);
    const headers = JSON.stringify([
      { key: 'origin', value: Buffer.from('kcat').toString('base64') },
      { key: 'origin', value: Buffer.from('twice').toString('base64') },
    ]);
    expect(rows.map((row) => [Buffer.from(row.key as Uint8Array).toString('utf8'), Buffer.from(row.value as Uint8Array).toString('utf8'), row.headers])).toEqual(
      lines.map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1), headers]),
    );
    for (const timestamp of timestamps) {
      expect(timestamp).toBeGreaterThanOrEqual(before - 1);
      expect(timestamp).toBeLessThanOrEqual(after + 1);
    }
  });
});

describe('a PK changelog, read by librdkafka as a topic', () => {
  it('gives each change as a record: key the primary key JSON, value the row JSON, the change type in mink.change, the stored timestamp', async () => {
    const columns: ColumnSpec[] = [
      { name: 'id', type: 'int32' },
      { name: 'name', type: 'string' },
      { name: 'big', type: 'int64' },
    ];
    const table = { columns, kind: 'pk' as const, primaryKey: ['id'] };
    const first: Array<[ChangeType, Row]> = [
      ['+I', { id: 1, name: 'one', big: 2n ** 62n }],
      ['+I', { id: 2, name: 'two', big: null }],
      ['-U', { id: 1, name: 'one', big: 2n ** 62n }],
      ['+U', { id: 1, name: 'uno', big: 1n }],
    ];
    const second: Array<[ChangeType, Row]> = [
      ['-D', { id: 2, name: 'two', big: null }],
      ['+I', { id: 3, name: 'three ✓', big: -5n }],
    ];
    const batchOf = (changes: Array<[ChangeType, Row]>, startOffset: number, timestampMs: number) =>
      recordBatchOfStoredRows(table, {
        startOffset,
        payload: encodeBatch(
          columns,
          changes.map(([, row]) => row),
          timestampMs,
          changes.map(([changeType]) => changeType),
        ),
      });
    logs.set('changelog', { batches: [batchOf(first, 0, 1_700_000_000_000), batchOf(second, 4, 1_700_000_000_500)], endOffset: 6 });

    const output = await kcat(['-b', broker, '-C', '-t', 'changelog', '-p', '0', '-o', 'beginning', '-e', '-q', '-f', '%o|%k|%s|%h|%T\\n']);
    expect(output.split('\n').filter((line) => line.length > 0)).toEqual([
      `0|{"id":1}|{"id":1,"name":"one","big":"4611686018427387904"}|${CHANGE_TYPE_HEADER}=+I|1700000000000`,
      `1|{"id":2}|{"id":2,"name":"two","big":null}|${CHANGE_TYPE_HEADER}=+I|1700000000000`,
      `2|{"id":1}|{"id":1,"name":"one","big":"4611686018427387904"}|${CHANGE_TYPE_HEADER}=-U|1700000000000`,
      `3|{"id":1}|{"id":1,"name":"uno","big":"1"}|${CHANGE_TYPE_HEADER}=+U|1700000000000`,
      `4|{"id":2}|{"id":2,"name":"two","big":null}|${CHANGE_TYPE_HEADER}=-D|1700000000500`,
      `5|{"id":3}|{"id":3,"name":"three ✓","big":"-5"}|${CHANGE_TYPE_HEADER}=+I|1700000000500`,
    ]);
  });
});
