import { describeKvTabletContract } from './kv-tablet.contract';
import { InMemoryKvTablet } from './in-memory-kv-tablet';

describeKvTabletContract('InMemoryKvTablet', {
  open: async () => new InMemoryKvTablet(),
  restore: (snapshotDirectory) => InMemoryKvTablet.restore(snapshotDirectory),
});
