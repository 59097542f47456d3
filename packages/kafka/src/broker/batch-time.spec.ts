import { encodeRecordBatch } from '../messages/record-batch';
import { searchTimestampInBatch } from './batch-time';

// One batch at offsets 40–42 with record timestamps 1 000, 2 000 and 3 000.
const BATCH = encodeRecordBatch({
  baseOffset: 40,
  records: [1_000, 2_000, 3_000].map((timestamp) => ({ timestamp, key: null, value: Uint8Array.of(1) })),
});

describe('searchTimestampInBatch', () => {
  // Each row proves where ListOffsets by timestamp lands within a batch, or that the search moves past it.
  it.each<[string, number, ReturnType<typeof searchTimestampInBatch>]>([
    ['before every record: the first one', 500, { found: { offset: 40, timestamp: 1_000 } }],
    ['exactly a record time: that record', 2_000, { found: { offset: 41, timestamp: 2_000 } }],
    ['between two records: the later one', 2_500, { found: { offset: 42, timestamp: 3_000 } }],
    ['the newest record time: the last one', 3_000, { found: { offset: 42, timestamp: 3_000 } }],
    ['after every record: the offset after the batch', 3_001, { nextOffset: 43 }],
  ])('%s', (_case, timestamp, expected) => {
    expect(searchTimestampInBatch(BATCH, timestamp)).toEqual(expected);
  });
});
