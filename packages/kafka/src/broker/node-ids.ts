/**
 * The Kafka broker id (int32) of a mink node id. Kafka clients key brokers by these ids, so each must be
 * stable across restarts and distinct per node: a decimal node id ("1", "2", as `mink up` names them) is
 * its own broker id; any other name gets a 31-bit FNV-1a hash of its UTF-8 bytes, offset above the range
 * decimal ids use, so the two kinds never meet.
 */
export function kafkaNodeIdOf(nodeId: string): number {
  if (/^(0|[1-9][0-9]{0,8})$/.test(nodeId)) return Number(nodeId);
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(nodeId)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return 1_000_000_000 + (hash % 1_147_483_647);
}

/** `host` and `port` of a `host:port` address (the last colon splits, so bracketed IPv6 hosts keep theirs). */
export function hostAndPortOf(address: string): { host: string; port: number } | null {
  const colon = address.lastIndexOf(':');
  if (colon <= 0) return null;
  const port = Number(address.slice(colon + 1));
  if (!Number.isSafeInteger(port) || port < 1 || port > 65_535) return null;
  return { host: address.slice(0, colon).replace(/^\[(.*)\]$/, '$1'), port };
}
