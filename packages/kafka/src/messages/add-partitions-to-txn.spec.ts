import { ERROR_CODES } from '../wire/codes';
import { ADD_PARTITIONS_TO_TXN_VERSIONS, decodeAddPartitionsToTxnRequest, encodeAddPartitionsToTxnResponse } from './add-partitions-to-txn';
import { bytesEncoder, kafkajsApi, KafkajsLong, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';

// kafkajs is the oracle: its client-side request encoders and response decoders.
const kafkajs = kafkajsApi('addPartitionsToTxn');
const decoded = wholeBodyDecoder(decodeAddPartitionsToTxnRequest);
const encoded = bytesEncoder(encodeAddPartitionsToTxnResponse);
const fields = { transactionalId: 'tx-1', producerId: KafkajsLong.fromValue(4_000_000_000), producerEpoch: 3, topics: [{ topic: 'orders', partitions: [0, 2] }, { topic: 'audit', partitions: [1] }] };

describe('AddPartitionsToTxn against kafkajs', () => {
  it.each([0, 1])('v%i: a request as kafkajs sends it decodes to its fields', async (version) => {
    // Proves the partitions a transaction adds are read exactly, with a producer id past 32 bits.
    expect(decoded(await kafkajs.requestBytes(version, fields), version)).toEqual({
      transactionalId: 'tx-1',
      producerId: 4_000_000_000,
      producerEpoch: 3,
      topics: [
        { name: 'orders', partitions: [0, 2] },
        { name: 'audit', partitions: [1] },
      ],
    });
  });

  it.each([0, 1])('v%i: kafkajs reads each partition\'s answer, and raises the first error', async (version) => {
    const { decode, parse } = kafkajs.response(version);
    const response = { throttleTimeMs: 0, results: [{ name: 'orders', results: [{ partitionIndex: 0, errorCode: 0 }, { partitionIndex: 2, errorCode: 0 }] }] };
    expect(await parse(await decode(encoded(version, response)))).toMatchObject({ errors: [{ topic: 'orders', partitionErrors: [{ partition: 0, errorCode: 0 }, { partition: 2, errorCode: 0 }] }] });
    const refused = { throttleTimeMs: 0, results: [{ name: 'orders', results: [{ partitionIndex: 0, errorCode: ERROR_CODES.CONCURRENT_TRANSACTIONS }] }] };
    await expect(parse(await decode(encoded(version, refused)))).rejects.toMatchObject({ type: 'CONCURRENT_TRANSACTIONS' });
  });

  it('refuses every truncation of a request, and versions outside the range', async () => {
    expect(prefixesNotRefused(await kafkajs.requestBytes(1, fields), (reader) => decodeAddPartitionsToTxnRequest(reader, 1))).toEqual([]);
    expect(() => decoded(Buffer.alloc(0), ADD_PARTITIONS_TO_TXN_VERSIONS.max + 1)).toThrow();
  });
});
