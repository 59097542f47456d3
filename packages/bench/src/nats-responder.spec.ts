import { REPLY_SIZE_HEADER_BYTES, replySizeAskedBy, requestAskingFor } from './nats-responder';

describe('the request of the NATS request/reply baseline', () => {
  it.each<[number, number, number]>([
    [97, 79, 97],
    [1_100, 6_000, 1_100],
    [2, 10, REPLY_SIZE_HEADER_BYTES],
    [100, 0, 100],
  ])('of %p bytes asking for %p bytes is %p bytes long and says so', (requestBytes, replyBytes, length) => {
    // Proves the baseline sends requests of the lookup's size, and the responder reads back the reply size asked for.
    const request = requestAskingFor(requestBytes, replyBytes);
    expect(request.byteLength).toBe(length);
    expect(replySizeAskedBy(request)).toBe(replyBytes);
  });

  it('asks for nothing when too short to say, and reads the header of a view into a larger buffer', () => {
    // Proves a truncated request gets an empty reply, and that the header is read at the view's own offset.
    expect(replySizeAskedBy(new Uint8Array(3))).toBe(0);
    const backing = new Uint8Array(16);
    backing.set(requestAskingFor(8, 513), 8);
    expect(replySizeAskedBy(backing.subarray(8))).toBe(513);
  });
});
