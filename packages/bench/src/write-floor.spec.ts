import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ColumnSpec } from '@mink/meta';
import { startNatsServer, startS3Server, type NatsServerHandle, type S3ServerHandle } from '@mink/devcluster';
import { END_OF_STREAM, bucketOfRow, decodeBatch, readIpcMessages, validateRows } from '@mink/records';
import { S3ObjectStore } from '@mink/s3stream';
import { BENCH_TABLE } from './bench-limits';
import { benchRows } from './write-scenario';
import { FloorWritePath, floorCallOf } from './write-floor';

const COLUMNS = BENCH_TABLE.columns as unknown as ColumnSpec[];
const BUCKET_KEY = [...BENCH_TABLE.bucketKey];

/** The ids in each Arrow IPC stream of `bytes` (whole streams one after the other, as a leader's request holds its buckets' batches), stream by stream. */
function idsOfStreams(bytes: Uint8Array): number[][] {
  const streams: number[][] = [];
  let position = 0;
  while (position < bytes.byteLength) {
    const messages = readIpcMessages(bytes.subarray(position));
    const end = position + messages[messages.length - 1]!.end + END_OF_STREAM.byteLength;
    streams.push(decodeBatch(COLUMNS, bytes.subarray(position, end)).rows.map((row) => Number(row.id)));
    position = end;
  }
  return streams;
}

describe('floorCallOf', () => {
  it("sends each leader the batches of its buckets, bucket by bucket, with every row in the bucket mink's bucketing gives it", () => {
    // Proves the floor path carries the same rows to the same buckets as mink's append paths.
    const rows = benchRows({ rows: 500, batchRows: 500, firstId: 1_000, payloadChars: 20 }, 0);
    const call = floorCallOf(COLUMNS, BUCKET_KEY, 8, 3, rows, 1_700_000_000_000);
    expect(call.requests).toHaveLength(3);
    const canonical = validateRows(COLUMNS, rows);
    const seen: number[] = [];
    call.requests.forEach((request, leader) => {
      const streams = idsOfStreams(request);
      const buckets = streams.map((ids) => bucketOfRow(canonical[rows.findIndex((row) => row.id === ids[0])]!, BUCKET_KEY, 8));
      // One stream per bucket of this leader that got rows, in bucket order, each holding only that bucket's rows.
      expect(buckets).toEqual([...buckets].sort((a, b) => a - b));
      expect(new Set(buckets).size).toBe(buckets.length);
      streams.forEach((ids, index) => {
        expect(buckets[index]! % 3).toBe(leader);
        for (const id of ids) expect(bucketOfRow(canonical[rows.findIndex((row) => row.id === id)]!, BUCKET_KEY, 8)).toBe(buckets[index]);
      });
      seen.push(...streams.flat());
    });
    expect(seen.sort((a, b) => a - b)).toEqual(rows.map((row) => row.id));
  });

  it('gives a leader none of whose buckets got rows an empty request', () => {
    const rows = benchRows({ rows: 1, batchRows: 1, firstId: 5 }, 0);
    const call = floorCallOf(COLUMNS, BUCKET_KEY, 8, 3, rows, 0);
    expect(call.requests.filter((request) => request.byteLength > 0)).toHaveLength(1);
    expect(idsOfStreams(call.requests.find((request) => request.byteLength > 0)!)).toEqual([[5]]);
  });
});

describe('FloorWritePath on a real nats-server and S3 server', () => {
  const leaderScript = join(__dirname, '..', 'dist', 'floor-leader.js');
  let dataDir: string;
  let nats: NatsServerHandle;
  let s3: S3ServerHandle;
  let store: S3ObjectStore;

  beforeAll(async () => {
    if (!existsSync(leaderScript)) throw new Error(`${leaderScript} is missing: build first (pnpm run build)`);
    dataDir = mkdtempSync(join(tmpdir(), 'mink-floor-'));
    [nats, s3] = await Promise.all([startNatsServer({ dataDir: join(dataDir, 'nats') }), startS3Server({ dataDir: join(dataDir, 's3'), bucket: 'floor-test' })]);
    store = new S3ObjectStore({ endpoint: s3.endpoint, bucket: 'floor-test', region: 'us-east-1', accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' });
  }, 60_000);

  afterAll(async () => {
    store?.close();
    await Promise.all([nats?.stop(), s3?.stop()]);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('stores exactly the bytes each leader was sent, in the order sent, with one commit per object, and removes everything on close', async () => {
    // Proves the floor path really uploads and commits what a call carries before acknowledging it.
    const floor = await FloorWritePath.open(
      { natsUrl: nats.url, s3Endpoint: s3.endpoint, s3Bucket: 'floor-test', s3Region: 'us-east-1', s3AccessKeyId: 'S3RVER', s3SecretAccessKey: 'S3RVER' },
      leaderScript,
    );
    const calls = Array.from({ length: 12 }, (_, index) => floorCallOf(COLUMNS, BUCKET_KEY, 8, 3, benchRows({ rows: 1_200, batchRows: 100, firstId: 0, payloadChars: 50 }, index), 0));
    try {
      // Four calls in flight; each call's requests leave in call order, so each leader receives them in that order.
      let next = 0;
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          while (next < calls.length) await floor.send(calls[next++]!);
        }),
      );
      const objects = (await store.list(floor.keyPrefix)).sort((a, b) => (a.key < b.key ? -1 : 1));
      expect(objects.length).toBeGreaterThanOrEqual(3);
      expect(objects.length).toBeLessThanOrEqual(3 * calls.length);
      for (let leader = 0; leader < 3; leader++) {
        const stored = Buffer.concat(await Promise.all(objects.filter((entry) => entry.key.startsWith(`${floor.keyPrefix}${leader}/`)).map((entry) => store.get(entry.key))));
        expect(stored.equals(Buffer.concat(calls.map((call) => call.requests[leader]!)))).toBe(true);
      }
      expect(await floor.commits()).toBe(objects.length);
    } finally {
      await floor.close(store, (line) => {
        throw new Error(line);
      });
    }
    expect(await store.list(floor.keyPrefix)).toEqual([]);
    // The leaders have exited: signal 0 to their pids finds no process.
    for (const pid of floor.processIds) expect(() => process.kill(pid, 0)).toThrow();
  }, 60_000);
});

