import { ERROR_CODES } from '../wire/codes';
import { END_TXN_VERSIONS, decodeEndTxnRequest, encodeEndTxnResponse } from './end-txn';
import { bytesEncoder, kafkajsApi, KafkajsLong, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';

// kafkajs is the oracle: its client-side request encoders and response decoders.
const kafkajs = kafkajsApi('endTxn');
const decoded = wholeBodyDecoder(decodeEndTxnRequest);
const encoded = bytesEncoder(encodeEndTxnResponse);

describe('EndTxn against kafkajs', () => {
  it.each([
    [0, true],
    [1, false],
  ])('v%i: a request as kafkajs sends it decodes to its fields (commit %p)', async (version, commit) => {
    const bytes = await kafkajs.requestBytes(version, { transactionalId: 'tx-1', producerId: KafkajsLong.fromValue(12), producerEpoch: 5, transactionResult: commit });
    expect(decoded(bytes, version)).toEqual({ transactionalId: 'tx-1', producerId: 12, producerEpoch: 5, committed: commit });
  });

  it.each([0, 1])('v%i: kafkajs reads the answer and raises its error', async (version) => {
    const { decode, parse } = kafkajs.response(version);
    expect(await parse(await decode(encoded(version, { throttleTimeMs: 0, errorCode: ERROR_CODES.NONE })))).toMatchObject({ errorCode: 0 });
    await expect(parse(await decode(encoded(version, { throttleTimeMs: 0, errorCode: ERROR_CODES.INVALID_TXN_STATE })))).rejects.toMatchObject({ type: 'INVALID_TXN_STATE' });
  });

  it('refuses every truncation of a request, and versions outside the range', async () => {
    const bytes = await kafkajs.requestBytes(0, { transactionalId: 'tx-1', producerId: KafkajsLong.fromValue(12), producerEpoch: 5, transactionResult: true });
    expect(prefixesNotRefused(bytes, (reader) => decodeEndTxnRequest(reader, 0))).toEqual([]);
    expect(() => decoded(Buffer.alloc(0), END_TXN_VERSIONS.max + 1)).toThrow();
  });
});
