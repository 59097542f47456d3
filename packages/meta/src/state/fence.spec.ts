import { isStreamOpenBy } from './fence';
import { NO_WRITERS, type StreamRecord, type StreamState } from './view';

function stream(state: StreamState, node: string | null, nodeEpoch: number, epoch: number): StreamRecord {
  return { state, epoch, node, nodeEpoch, startOffset: 0, endOffset: 0, slices: [], writers: NO_WRITERS };
}

describe('isStreamOpenBy', () => {
  const self = { nodeId: 'n1', nodeEpoch: 4 };
  it.each<[string, StreamRecord, number | undefined, boolean]>([
    ['open by this incarnation, any stream epoch', stream('open', 'n1', 4, 7), undefined, true],
    ['open by this incarnation at the stream epoch asked', stream('open', 'n1', 4, 7), 7, true],
    ['open by this incarnation at a newer stream epoch than asked (the writer is stale)', stream('open', 'n1', 4, 8), 7, false],
    ['open by this incarnation at an older stream epoch than asked', stream('open', 'n1', 4, 6), 7, false],
    ['open by an earlier incarnation of the same node', stream('open', 'n1', 3, 7), undefined, false],
    ['open by a later incarnation of the same node', stream('open', 'n1', 5, 7), 7, false],
    ['open by another node', stream('open', 'n2', 4, 7), 7, false],
    ['closed by this incarnation', stream('closed', 'n1', 4, 7), 7, false],
    ['never opened', stream('closed', null, 0, 0), undefined, false],
  ])('%s', (_case, record, streamEpoch, expected) => {
    expect(isStreamOpenBy(record, self, streamEpoch)).toBe(expected);
  });
});
