import type { MinkClient } from '@mink/client';
import type { ColumnSpec } from '@mink/meta';

/** The columns of the primary-key tables `PutLoad` writes to: key `id`, and the version the last put gave it. */
export const PUT_LOAD_COLUMNS: ColumnSpec[] = [
  { name: 'id', type: 'string' },
  { name: 'version', type: 'int64' },
];

/**
 * Continuous put load on a primary-key table for fault tests. Each lane owns its own keys and puts them
 * all again on every call with the next version (or, with `freshKeys`, puts `keysPerLane` keys it never
 * wrote before, so the tables keep growing), one call in flight per lane, or up to `inFlight` calls that
 * the client pipelines; so after the load, each key's stored version must be at least the newest one
 * acknowledged for it (no acknowledged put lost, none overtaken by an earlier one) and at most the newest
 * one sent (nothing invented). Bounded by `callsMax` so it always ends.
 */
export class PutLoad {
  /** Calls acknowledged and failed so far, and the first error lines. */
  acknowledgedCalls = 0;
  failedCalls = 0;
  readonly errors: string[] = [];
  /** Per key: the newest version acknowledged, and the newest version sent. */
  readonly acknowledged = new Map<string, number>();
  readonly sent = new Map<string, number>();
  private running = false;
  private lanes: Promise<void>[] = [];
  private calls = 0;

  constructor(
    private readonly client: MinkClient,
    private readonly table: string,
    private readonly options: { lanes: number; keysPerLane: number; callsMax: number; pauseMs: number; freshKeys?: boolean; inFlight?: number } = {
      lanes: 2,
      keysPerLane: 20,
      callsMax: 20_000,
      pauseMs: 20,
    },
  ) {}

  start(): void {
    this.running = true;
    this.lanes = Array.from({ length: this.options.lanes }, (_, lane) => this.lane(lane));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.lanes);
  }

  /** Resolves once `calls` more calls than now are acknowledged; fails after `timeoutMs` with the last errors. */
  async advance(calls: number, timeoutMs = 60_000): Promise<void> {
    const target = this.acknowledgedCalls + calls;
    const deadline = Date.now() + timeoutMs;
    while (this.acknowledgedCalls < target) {
      if (Date.now() > deadline) {
        throw new Error(`the put load acknowledged ${this.acknowledgedCalls} calls, not ${target}, within ${timeoutMs} ms; last errors: ${this.errors.slice(-3).join(' | ')}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /**
   * Looks every key up and returns those whose stored version is below the newest acknowledged one or above
   * the newest sent one (empty when no acknowledged put was lost), at most 20.
   */
  async violations(): Promise<string[]> {
    const keys = [...this.sent.keys()];
    const { rows } = await this.client.table(this.table).lookup(keys.map((id) => ({ id })));
    const wrong: string[] = [];
    keys.forEach((id, index) => {
      const stored = rows[index] === null ? -1 : Number(rows[index]!.version);
      const acknowledged = this.acknowledged.get(id) ?? -1;
      const sent = this.sent.get(id)!;
      if (stored < acknowledged || stored > sent) wrong.push(`${id}: stored ${stored}, acknowledged ${acknowledged}, sent ${sent}`);
    });
    return wrong.slice(0, 20);
  }

  private async lane(lane: number): Promise<void> {
    const idsOf = (version: number) =>
      Array.from({ length: this.options.keysPerLane }, (_, index) => `lane-${lane}-key-${this.options.freshKeys ? version * this.options.keysPerLane + index : index}`);
    const inFlight = new Set<Promise<void>>();
    for (let version = 0; this.running && this.calls < this.options.callsMax; version++) {
      this.calls++;
      const ids = idsOf(version);
      for (const id of ids) this.sent.set(id, version);
      const call = this.client
        .table(this.table)
        .put(ids.map((id) => ({ id, version })))
        .then(
          () => {
            for (const id of ids) this.acknowledged.set(id, Math.max(version, this.acknowledged.get(id) ?? -1));
            this.acknowledgedCalls++;
          },
          (error: unknown) => {
            this.failedCalls++;
            if (this.errors.length < 50) this.errors.push(String(error));
          },
        )
        .finally(() => inFlight.delete(call));
      inFlight.add(call);
      if (inFlight.size >= (this.options.inFlight ?? 1)) await Promise.race(inFlight);
      await new Promise((resolve) => setTimeout(resolve, this.options.pauseMs));
    }
    await Promise.all(inFlight);
  }
}
