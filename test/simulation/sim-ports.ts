import { UnavailableError } from '@mink/protocol';
import type { AppendResult, Command, TailSubscription } from '@mink/meta';
import type { PurgeableMetaLog } from '@mink/metalog';
import type { ByteRange, ListedObject, ObjectBody, ObjectStore } from '@mink/s3stream';
import type { InMemoryMetaLog } from '@mink/testing';
import { GatedDeliveries, gated, type ProcessGate } from './process-gate';
import type { SimRandom } from './sim-random';

/** The shared metadata log as one process reaches it. Snapshots are off in the simulation, so nothing is purged. */
export class GatedMetaLog implements PurgeableMetaLog {
  constructor(
    private readonly log: InMemoryMetaLog,
    private readonly gate: ProcessGate,
    /** How long an append takes to reach the log, and its ack to come back (a JetStream publish round trip). */
    private readonly latencyMs: () => number = () => 0,
  ) {}

  append(command: Command, messageId: string): Promise<AppendResult> {
    return gated(this.gate, async () => {
      await delay(this.latencyMs());
      const result = await this.log.append(command, messageId);
      await delay(this.latencyMs());
      return result;
    });
  }

  tail(fromSeq: number, onEntry: (seq: number, command: Command) => void, onError?: (error: Error) => void): TailSubscription {
    const deliveries = new GatedDeliveries<[number, Command]>(this.gate, ([seq, command]) => onEntry(seq, command));
    return this.log.tail(fromSeq, (seq, command) => deliveries.push([seq, command]), onError);
  }

  lastSeq(): Promise<number> {
    return gated(this.gate, () => this.log.lastSeq());
  }

  async firstSeq(): Promise<number> {
    return 1;
  }

  async purgeBefore(): Promise<void> {
    throw new Error('the simulation runs without metadata snapshots: nothing is purged');
  }
}

function delay(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}

/** What object storage does in a run: calls that fail (before or after taking effect) and how slow they are. */
export interface StorageFaults {
  failChance: number;
  /** Of the failed writes, the share that took effect first (an upload whose answer was lost). */
  lostAnswerChance: number;
  latencyMsMax: number;
}

export const NO_STORAGE_FAULTS: StorageFaults = { failChance: 0, lostAnswerChance: 0, latencyMsMax: 0 };

/** The shared object store as one process reaches it, with the run's storage faults. */
export class SimObjectStore implements ObjectStore {
  constructor(
    private readonly store: ObjectStore,
    private readonly gate: ProcessGate,
    private readonly random: SimRandom,
    private readonly faults: () => StorageFaults,
    private readonly onFault: () => void = () => undefined,
  ) {}

  private call<T>(what: string, write: boolean, run: () => Promise<T>): Promise<T> {
    return gated(this.gate, async () => {
      const faults = this.faults();
      if (faults.latencyMsMax > 0) await delay(this.random.integer(1, faults.latencyMsMax));
      if (this.random.chance(faults.failChance)) {
        this.onFault();
        if (write && this.random.chance(faults.lostAnswerChance)) await run();
        throw new UnavailableError(`injected storage fault: ${what} answered 503 SlowDown`);
      }
      return run();
    });
  }

  put(key: string, body: ObjectBody): Promise<void> {
    return this.call(`PUT ${key}`, true, () => this.store.put(key, body));
  }

  get(key: string, range?: ByteRange): Promise<Uint8Array> {
    return this.call(`GET ${key}`, false, () => this.store.get(key, range));
  }

  putFile(key: string, path: string): Promise<void> {
    return this.call(`PUT ${key}`, true, () => this.store.putFile(key, path));
  }

  getToFile(key: string, path: string): Promise<number> {
    return this.call(`GET ${key}`, false, () => this.store.getToFile(key, path));
  }

  delete(keys: string[]): Promise<void> {
    return this.call(`DELETE ${keys.length} keys`, true, () => this.store.delete(keys));
  }

  list(prefix: string): Promise<ListedObject[]> {
    return this.call(`LIST ${prefix}`, false, () => this.store.list(prefix));
  }
}
