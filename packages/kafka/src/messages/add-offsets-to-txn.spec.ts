import { ERROR_CODES } from '../wire/codes';
import { ADD_OFFSETS_TO_TXN_VERSIONS, decodeAddOffsetsToTxnRequest, encodeAddOffsetsToTxnResponse } from './add-offsets-to-txn';
import { bytesEncoder, kafkajsApi, KafkajsLong, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';

// kafkajs is the oracle: its client-side request encoders and response decoders.
const kafkajs = kafkajsApi('addOffsetsToTxn');
const decoded = wholeBodyDecoder(decodeAddOffsetsToTxnRequest);
const encoded = bytesEncoder(encodeAddOffsetsToTxnResponse);
const fields = { transactionalId: 'tx-1', producerId: KafkajsLong.fromValue(12), producerEpoch: 0, groupId: 'readers' };

describe('AddOffsetsToTxn against kafkajs', () => {
  it.each([0, 1])('v%i: a request as kafkajs sends it decodes to its fields', async (version) => {
    expect(decoded(await kafkajs.requestBytes(version, fields), version)).toEqual({ transactionalId: 'tx-1', producerId: 12, producerEpoch: 0, groupId: 'readers' });
  });

  it.each([0, 1])('v%i: kafkajs reads the answer and raises its error', async (version) => {
    const { decode, parse } = kafkajs.response(version);
    expect(await parse(await decode(encoded(version, { throttleTimeMs: 0, errorCode: ERROR_CODES.NONE })))).toMatchObject({ errorCode: 0 });
    await expect(parse(await decode(encoded(version, { throttleTimeMs: 0, errorCode: ERROR_CODES.INVALID_PRODUCER_EPOCH })))).rejects.toMatchObject({ type: 'INVALID_PRODUCER_EPOCH' });
  });

  it('refuses every truncation of a request, and versions outside the range', async () => {
    expect(prefixesNotRefused(await kafkajs.requestBytes(0, fields), (reader) => decodeAddOffsetsToTxnRequest(reader, 0))).toEqual([]);
    expect(() => decoded(Buffer.alloc(0), ADD_OFFSETS_TO_TXN_VERSIONS.max + 1)).toThrow();
  });
});
