import { encodeRecordBatch, type RecordInput } from '../messages/record-batch';
import { KafkajsCompression, kafkajsRecordBatch } from '../messages/kafka-oracle.fixture';
import { sameRecords } from './batch-records';

const BYTES_MAX = 1024 * 1024;
const bytes = (text: string) => Buffer.from(text);
const record = (key: string | null, value: string | null, timestamp = 1_700_000_000_000, headers: RecordInput['headers'] = []): RecordInput => ({
  key: key === null ? null : bytes(key),
  value: value === null ? null : bytes(value),
  timestamp,
  headers,
});
const batch = (records: RecordInput[]) => encodeRecordBatch({ baseOffset: 0, records, producerId: 7, producerEpoch: 0, baseSequence: 40 });

describe('sameRecords', () => {
  it.each<[string, Uint8Array, Uint8Array, boolean]>([
    ['the same records', batch([record('k1', 'v1'), record('k2', 'v2')]), batch([record('k1', 'v1'), record('k2', 'v2')]), true],
    ['the same records stamped at other times (a retry encoded anew)', batch([record('k1', 'v1', 1), record('k2', 'v2', 5)]), batch([record('k1', 'v1', 900), record('k2', 'v2', 9)]), true],
    ['the same records at another base offset (as stored)', batch([record('k1', 'v1')]), encodeRecordBatch({ baseOffset: 500, records: [record('k1', 'v1')] }), true],
    ['null keys and values alike', batch([record(null, null)]), batch([record(null, null)]), true],
    ['another value', batch([record('k1', 'v1')]), batch([record('k1', 'v2')]), false],
    ['another key', batch([record('k1', 'v1')]), batch([record('k9', 'v1')]), false],
    ['a null key against an empty one', batch([record(null, 'v1')]), batch([record('', 'v1')]), false],
    ['one record more', batch([record('k1', 'v1')]), batch([record('k1', 'v1'), record('k1', 'v1')]), false],
    ['the same records in another order', batch([record('k1', 'v1'), record('k2', 'v2')]), batch([record('k2', 'v2'), record('k1', 'v1')]), false],
    ['another header value', batch([record('k1', 'v1', 1, [{ key: 'h', value: bytes('a') }])]), batch([record('k1', 'v1', 1, [{ key: 'h', value: bytes('b') }])]), false],
    ['a header more', batch([record('k1', 'v1')]), batch([record('k1', 'v1', 1, [{ key: 'h', value: null }])]), false],
    ['bytes that are no batch', batch([record('k1', 'v1')]), new Uint8Array([1, 2, 3]), false],
  ])('%s: %p', (_case, first, second, expected) => {
    // Proves a producer's retry is known by its records alone, and other records under the same sequences are not.
    expect(sameRecords(first, second, BYTES_MAX)).toBe(expected);
    expect(sameRecords(second, first, BYTES_MAX)).toBe(expected);
  });

  it.each([
    ['uncompressed', KafkajsCompression.None],
    ['gzip', KafkajsCompression.GZIP],
  ])('kafkajs encoding a batch (%s) again at another time, some messages with timestamps of their own: the same records', async (_codec, compression) => {
    // Proves the check holds for the retries kafkajs sends: it stamps the batch, and the messages without a
    // timestamp, with the time of each attempt, so the records' timestamp deltas change between attempts.
    const attempt = (now: number) =>
      kafkajsRecordBatch({
        messages: [
          { key: bytes('k1'), value: bytes('v1'), timestamp: 1_600_000_000_000 },
          { key: bytes('k2'), value: bytes('v2'), timestamp: now },
        ],
        producerId: 7,
        firstSequence: 40,
        compression,
      });
    const first = await attempt(1_700_000_000_000);
    const retry = await attempt(1_700_000_004_321);
    expect(Buffer.from(retry).equals(Buffer.from(first))).toBe(false);
    expect(sameRecords(first, retry, BYTES_MAX)).toBe(true);
  });
});
