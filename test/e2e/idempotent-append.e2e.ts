import { LIMITS } from '@mink/config';
/**
 * Retries never duplicate rows (Kafka's idempotent producer): an append whose commit applies but whose
 * reply is lost (the caller gives up before the answer arrives) is retried with the same writer id and
 * sequence, and the leader answers with the original offsets instead of storing the rows again. The
 * rows are then scanned exactly once. An older sequence of the same writer is refused.
 */
import { connect } from 'nats';
import { LocalCluster } from '@mink/devcluster';
import { MinkError, SUBJECTS } from '@mink/protocol';
import { requestJson } from '@mink/transport';
import { eventually, http, temporaryDirectory } from './helpers';

jest.setTimeout(180_000);

describe('idempotent appends on a real local cluster', () => {
  const directory = temporaryDirectory('idempotent');
  let cluster: LocalCluster | null = null;

  afterAll(async () => {
    await cluster?.stop();
    directory.remove();
  });

  it('answers a retried batch with its original offsets and stores it once', async () => {
    cluster = await LocalCluster.start({ dataDir: directory.path, nodes: 3, coordinators: 1, gatewayPort: 0, kafkaPort: 0, leaseTtlMs: 3_000, coordinatorTickMs: 500 });
    const gateway = cluster.gatewayUrl;
    expect((await http(gateway, 'POST', '/v1/tables', { name: 'retries', columns: [{ name: 'id', type: 'int64' }], buckets: 1 })).status).toBe(201);
    const view = await eventually('bucket open', async () => {
      const status = (await http(gateway, 'GET', '/v1/cluster')).body;
      return status.buckets[0]?.state === 'open' ? status : undefined;
    });
    const leader = view.nodes.find((node: any) => node.id === view.buckets[0].leader);

    const nc = await connect({ servers: cluster.natsUrl });
    try {
      const route = await requestJson<any>(nc, SUBJECTS.anyNodeRpc, { op: 'describeTable', table: 'retries' });
      const append = (seq: number, rows: unknown[], timeoutMs?: number) =>
        requestJson<any>(
          nc,
          SUBJECTS.nodeRpc(leader.address),
          { op: 'append', table: 'retries', tableId: route.tableId, partition: null, bucket: 0, rows, writer: { id: 'writer-a', seq } },
          timeoutMs,
        );
      const first = await append(0, [{ id: 1 }, { id: 2 }]);
      expect(first).toMatchObject({ bucket: 0, baseOffset: 0, count: 2 });

      // The reply to seq 1 is lost: the caller stops waiting after 1 ms, long before the commit applies.
      const lost = await append(1, [{ id: 3 }, { id: 4 }, { id: 5 }], 1).catch((error) => error);
      expect(lost).toBeInstanceOf(MinkError);
      expect((lost as MinkError).code).toBe('Timeout');
      // The retry carries the same writer and sequence; whether it joins the first attempt in flight or
      // finds it committed, it gets the original offsets.
      const retried = await append(1, [{ id: 3 }, { id: 4 }, { id: 5 }]);
      expect(retried).toMatchObject({ bucket: 0, baseOffset: 2, count: 3 });
      const again = await append(1, [{ id: 3 }, { id: 4 }, { id: 5 }]);
      expect(again).toEqual({ bucket: 0, baseOffset: 2, count: 3, duplicate: true });

      // An earlier batch still remembered (a writer with several requests in flight may retry it after a
      // later one was acknowledged) is answered with its offsets too, and not stored again.
      const earlier = await append(0, [{ id: 1 }, { id: 2 }]);
      expect(earlier).toEqual({ bucket: 0, baseOffset: 0, count: 2, duplicate: true });

      // Once LIMITS.writerBatchesRemembered later batches have committed, batch 0 is forgotten: a Conflict.
      for (let seq = 2; seq < 2 + LIMITS.writerBatchesRemembered; seq++) await append(seq, [{ id: 10 + seq }]);
      const stale = await append(0, [{ id: 99 }]).catch((error) => error);
      expect((stale as MinkError).code).toBe('Conflict');
    } finally {
      await nc.close();
    }

    const scanned = (await http(gateway, 'GET', '/v1/tables/retries/scan?bucket=0&offset=0&limit=100')).body;
    // Every batch once, in sequence order: the duplicates and the conflicting batch stored nothing.
    const later = Array.from({ length: LIMITS.writerBatchesRemembered }, (_, index) => [5 + index, String(12 + index)]);
    expect(scanned.highWatermark).toBe(5 + LIMITS.writerBatchesRemembered);
    expect(scanned.records.map((record: any) => [record.offset, record.row.id])).toEqual([
      [0, '1'],
      [1, '2'],
      [2, '3'],
      [3, '4'],
      [4, '5'],
      ...later,
    ]);
  });
});
