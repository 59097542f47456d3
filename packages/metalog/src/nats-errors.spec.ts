import { NatsError, type KV, type NatsConnection } from 'nats';
import { openLatestValueBucket } from './nats-errors';

/** A connection whose KV opens fail with the JetStream API error `errorCode` `failures` times, then succeed. */
function connectionFailing(errorCode: number, failures: number) {
  const bucket = {} as KV;
  let calls = 0;
  const connection = {
    jetstream: () => ({
      views: {
        kv: async () => {
          calls += 1;
          if (calls <= failures) {
            const error = new NatsError('stream create failed', '400');
            error.api_error = { code: 400, err_code: errorCode, description: 'subjects overlap with an existing stream' };
            throw error;
          }
          return bucket;
        },
      },
    }),
  } as unknown as NatsConnection;
  return { connection, bucket, calls: () => calls };
}

describe('openLatestValueBucket', () => {
  it.each([
    ['subjects overlap with an existing stream', 10065],
    ['stream name already in use', 10058],
  ])('opens the bucket another process created while this one was creating it (%s)', async (_description, errorCode) => {
    // Proves a process that loses the creation race to another starting process does not exit: it opens the winner's bucket.
    const { connection, bucket, calls } = connectionFailing(errorCode, 1);
    await expect(openLatestValueBucket(connection, 'mink_heartbeats')).resolves.toBe(bucket);
    expect(calls()).toBe(2);
  });

  it('gives up after a bounded number of lost races, and does not retry other errors', async () => {
    // Proves the retry is bounded and limited to the creation race.
    const raced = connectionFailing(10065, 10);
    await expect(openLatestValueBucket(raced.connection, 'b')).rejects.toThrow('stream create failed');
    expect(raced.calls()).toBe(3);
    const other = connectionFailing(10071, 10);
    await expect(openLatestValueBucket(other.connection, 'b')).rejects.toThrow('stream create failed');
    expect(other.calls()).toBe(1);
  });
});
