import { InMemoryKvTablet } from '@mink/kv';
import type { TabletStorage } from '@mink/data-plane';

/**
 * PK tablets in memory for the simulation (production's LMDB tablets are files, whose I/O no simulated clock
 * drives): a snapshot is the tablet's encoded state, one object, restored by decoding it.
 */
export const IN_MEMORY_TABLETS: TabletStorage = {
  async openEmpty() {
    return new InMemoryKvTablet();
  },

  async restore(objectStore, object) {
    const bytes = await objectStore.get(object);
    return { tablet: InMemoryKvTablet.decode(bytes), bytes: bytes.byteLength };
  },

  async upload(objectStore, tablet, _directory, keyOf) {
    if (!(tablet instanceof InMemoryKvTablet)) throw new Error('the simulation keeps every tablet in memory');
    const { appliedOffset, bytes } = tablet.encode();
    const object = keyOf(appliedOffset);
    await objectStore.put(object, bytes);
    return { object, appliedOffset, bytes: bytes.byteLength };
  },
};
