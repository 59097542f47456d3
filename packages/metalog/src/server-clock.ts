import { performance } from 'node:perf_hooks';
import type { KV } from 'nats';
import { LIMITS } from '@mink/config';

/**
 * An estimate of the NATS server's clock, so the age of a KV entry can be judged by the time the server
 * stamped on it (docs/architecture.md §3) rather than by this machine's wall clock.
 *
 * The estimate is an offset between the server's wall clock and this process's monotonic clock
 * (`performance.now()`), so steps of the local wall clock do not matter. It is built from lower bounds:
 * an entry stamped `S` by the server and received here at local time `L` proves `serverNow(L) >= S`, so
 * `offset >= S - L`. Every entry received gives such a bound; an entry this process wrote itself and read
 * back right away gives a tight one (off by at most one round trip). The estimate is the largest bound
 * among the last `LIMITS.serverClockSamplesMax` samples: it never runs ahead of the server, so ages are
 * under-estimated by at most the delivery delay of the best sample (a node is judged dead slightly late,
 * never early), and old samples age out so a slow drift between the two clocks is followed.
 */
export class ServerClock {
  private readonly lowerBoundsMs: number[] = [];

  constructor(private readonly samplesMax: number = LIMITS.serverClockSamplesMax) {}

  /** Records that an entry stamped `serverStampMs` (server epoch ms) was received at local monotonic `receivedAtMs`. */
  observe(serverStampMs: number, receivedAtMs: number): void {
    this.lowerBoundsMs.push(serverStampMs - receivedAtMs);
    if (this.lowerBoundsMs.length > this.samplesMax) this.lowerBoundsMs.shift();
  }

  hasEstimate(): boolean {
    return this.lowerBoundsMs.length > 0;
  }

  /** The server's wall clock (epoch ms) at local monotonic time `localNowMs`; throws before any sample. */
  serverNowMs(localNowMs: number = performance.now()): number {
    if (!this.hasEstimate()) throw new Error('invariant broken: the server clock is read before any sample of it');
    return localNowMs + Math.max(...this.lowerBoundsMs);
  }

  /** Age by server time of an entry the server stamped at `serverStampMs`. */
  ageMs(serverStampMs: number, localNowMs: number = performance.now()): number {
    return this.serverNowMs(localNowMs) - serverStampMs;
  }

  /**
   * Writes `key` in `kv` and reads the key back: the tight sample that makes the estimate usable even
   * when every other entry in the bucket is old. Several processes may probe the same key; whatever entry
   * is read back was written no earlier than this probe's own write, so it is at least as tight. Sharing
   * one key keeps the bucket from growing with every process that ever started. In a NATS cluster the read
   * may reach a replica that has not stored the write yet (seen at the start of a cluster of three): a miss
   * is read again, up to `LIMITS.serverClockProbeReadsMax` reads.
   */
  async probe(kv: Pick<KV, 'put' | 'get'>, key: string, retryMs: number = LIMITS.serverClockProbeReadRetryMs): Promise<void> {
    await kv.put(key, new Uint8Array(0));
    for (let read = 1; read <= LIMITS.serverClockProbeReadsMax; read++) {
      const entry = await kv.get(key);
      const receivedAtMs = performance.now();
      if (entry !== null) {
        this.observe(entry.created.getTime(), receivedAtMs);
        return;
      }
      if (read < LIMITS.serverClockProbeReadsMax) await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
    throw new Error(`the clock probe ${key} could not be read back after ${LIMITS.serverClockProbeReadsMax} reads`);
  }
}
