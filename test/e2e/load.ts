import { MinkClient } from '@mink/client';
import { http } from './helpers';

/**
 * Continuous append load for fault tests: batches of unique ids sent through the TypeScript client, one
 * call in flight per lane. Every id whose call resolved is recorded as acknowledged; a call that failed
 * is recorded as unacknowledged (its rows may or may not be stored, which is what a missing
 * acknowledgement means). Bounded by `callsMax` so it always ends.
 */
export class AppendLoad {
  readonly acknowledged = new Set<number>();
  readonly unacknowledged = new Set<number>();
  readonly errors: string[] = [];
  private nextId = 0;
  private running = false;
  private lanes: Promise<void>[] = [];
  private calls = 0;

  constructor(
    private readonly client: MinkClient,
    private readonly table: string,
    private readonly options: { lanes: number; batchRows: number; callsMax: number; pauseMs: number } = { lanes: 4, batchRows: 20, callsMax: 20_000, pauseMs: 20 },
  ) {}

  start(): void {
    this.running = true;
    this.lanes = Array.from({ length: this.options.lanes }, () => this.lane());
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.lanes);
  }

  private async lane(): Promise<void> {
    while (this.running && this.calls < this.options.callsMax) {
      this.calls++;
      const ids = Array.from({ length: this.options.batchRows }, () => this.nextId++);
      try {
        await this.client.table(this.table).append(ids.map((id) => ({ id, lane: 'load' })));
        for (const id of ids) this.acknowledged.add(id);
      } catch (error) {
        for (const id of ids) this.unacknowledged.add(id);
        if (this.errors.length < 50) this.errors.push(String(error));
      }
      await new Promise((resolve) => setTimeout(resolve, this.options.pauseMs));
    }
  }
}

/** Every id stored in the table, with how often it occurs, scanned bucket by bucket to the high watermark. */
export async function storedIds(gateway: string, table: string, buckets: number): Promise<Map<number, number>> {
  const counts = new Map<number, number>();
  for (let bucket = 0; bucket < buckets; bucket++) {
    let offset = 0;
    for (;;) {
      const response = await http(gateway, 'GET', `/v1/tables/${table}/scan?bucket=${bucket}&offset=${offset}&limit=10000&columns=id`);
      if (response.status !== 200) throw new Error(`scan of bucket ${bucket} failed: ${JSON.stringify(response.body)}`);
      for (const record of response.body.records) {
        if (record.offset !== offset) throw new Error(`bucket ${bucket}: offset ${record.offset} where ${offset} was expected`);
        const id = Number(record.row.id);
        counts.set(id, (counts.get(id) ?? 0) + 1);
        offset++;
      }
      if (offset >= response.body.highWatermark) break;
    }
  }
  return counts;
}

/** Every acknowledged id is stored exactly once, and nothing is stored twice. */
export function expectAcknowledgedExactlyOnce(load: AppendLoad, stored: Map<number, number>): void {
  const missing = [...load.acknowledged].filter((id) => stored.get(id) !== 1);
  const doubled = [...stored.entries()].filter(([, count]) => count > 1).map(([id]) => id);
  const unknown = [...stored.keys()].filter((id) => !load.acknowledged.has(id) && !load.unacknowledged.has(id));
  expect({ missing: missing.slice(0, 20), doubled: doubled.slice(0, 20), unknown: unknown.slice(0, 20) }).toEqual({ missing: [], doubled: [], unknown: [] });
}
