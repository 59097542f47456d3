import { ERROR_CODES } from '../wire/codes';
import { KafkaWriter } from '../wire/writer';
import { TXN_OFFSET_COMMIT_VERSIONS, decodeTxnOffsetCommitRequest, encodeTxnOffsetCommitResponse } from './txn-offset-commit';
import { bytesEncoder, kafkajsApi, KafkajsLong, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';

// kafkajs is the oracle (versions 0 and 1); version 2 is written field by field from the spec.
const kafkajs = kafkajsApi('txnOffsetCommit');
const decoded = wholeBodyDecoder(decodeTxnOffsetCommitRequest);
const encoded = bytesEncoder(encodeTxnOffsetCommitResponse);
const fields = { transactionalId: 'tx-1', groupId: 'readers', producerId: KafkajsLong.fromValue(12), producerEpoch: 2, topics: [{ topic: 'in', partitions: [{ partition: 1, offset: '42', metadata: 'm' }] }] };

describe('TxnOffsetCommit', () => {
  it.each([0, 1])('v%i: a request as kafkajs sends it decodes to its fields', async (version) => {
    expect(decoded(await kafkajs.requestBytes(version, fields), version)).toEqual({
      transactionalId: 'tx-1',
      groupId: 'readers',
      producerId: 12,
      producerEpoch: 2,
      topics: [{ name: 'in', partitions: [{ partitionIndex: 1, committedOffset: 42, committedLeaderEpoch: -1, committedMetadata: 'm' }] }],
    });
  });

  it('v2: reads each partition\'s committed leader epoch, and a null metadata', () => {
    const body = new KafkaWriter()
      .string('tx-1')
      .string('readers')
      .int64(12)
      .int16(2)
      .array([0], (topic) => void topic.string('in').array([0], (partition) => void partition.int32(1).int64(42).int32(7).nullableString(null)))
      .finish();
    expect(decoded(Buffer.concat(body), 2).topics).toEqual([{ name: 'in', partitions: [{ partitionIndex: 1, committedOffset: 42, committedLeaderEpoch: 7, committedMetadata: null }] }]);
  });

  it.each([0, 1])('v%i: kafkajs reads each partition\'s answer and raises the first error', async (version) => {
    const { decode, parse } = kafkajs.response(version);
    expect(await parse(await decode(encoded(version, { throttleTimeMs: 0, topics: [{ name: 'in', partitions: [{ partitionIndex: 1, errorCode: 0 }] }] })))).toMatchObject({ topics: [{ topic: 'in', partitions: [{ partition: 1, errorCode: 0 }] }] });
    await expect(parse(await decode(encoded(version, { throttleTimeMs: 0, topics: [{ name: 'in', partitions: [{ partitionIndex: 1, errorCode: ERROR_CODES.INVALID_PRODUCER_EPOCH }] }] })))).rejects.toMatchObject({ type: 'INVALID_PRODUCER_EPOCH' });
  });

  it('refuses every truncation of a request, and versions outside the range', async () => {
    expect(prefixesNotRefused(await kafkajs.requestBytes(1, fields), (reader) => decodeTxnOffsetCommitRequest(reader, 1))).toEqual([]);
    expect(() => decoded(Buffer.alloc(0), TXN_OFFSET_COMMIT_VERSIONS.max + 1)).toThrow();
  });
});
