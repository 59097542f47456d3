import { encodeRecordBatch } from '@mink/kafka';
import { offsetsOfRecordBatch } from './kafka-backend';

describe('offsetsOfRecordBatch', () => {
  it('reads the offsets a stored Kafka record batch takes from its header, as a produce counts them', () => {
    const records = Array.from({ length: 5 }, (_, index) => ({ key: null, value: new TextEncoder().encode(`v${index}`), headers: [], timestamp: 1_000 + index }));
    expect(offsetsOfRecordBatch(encodeRecordBatch({ baseOffset: 42, records }))).toBe(5);
    expect(offsetsOfRecordBatch(encodeRecordBatch({ baseOffset: 0, records: records.slice(0, 1) }))).toBe(1);
  });

  it('counts nothing for bytes too short to be a batch header', () => {
    expect(offsetsOfRecordBatch(new Uint8Array(26))).toBe(0);
  });
});
