import { connect, type NatsConnection } from 'nats';
import { LIMITS } from '@mink/config';
import { MinkError, SUBJECTS, type CoordinatorRequest, type CreateTableResult, type RebalanceResult, type HolderResult } from '@mink/protocol';
import { requestJson } from '@mink/transport';
import { backoffDelayMs, sleep } from './backoff';
import { TableClient, type TableClientOptions } from './table-client';

export interface MinkClientOptions {
  /** NATS server URL(s) of the cluster. */
  servers: string | string[];
  /** Name shown in NATS monitoring. */
  name?: string;
  /** Append requests in flight per bucket of a table (default LIMITS.writerRequestsInFlightMax). */
  appendsInFlightPerBucket?: number;
}

/** Coordinator answers carry the metadata sequence at which their effect is visible. */
export type WithSeq<T> = T & { metaSeq: number };

/**
 * The TypeScript client of mink. It talks to the cluster over NATS only. Coordinator actions go to
 * whichever coordinator replica answers (a non-holder forwards to the lease holder); `Unavailable`
 * answers (no coordinator yet, a lease changing hands) are retried with bounded backoff.
 */
export class MinkClient {
  private readonly tables = new Map<string, TableClient>();

  private constructor(
    readonly nc: NatsConnection,
    private readonly ownsConnection: boolean,
    private readonly tableOptions: TableClientOptions,
  ) {}

  static async connect(options: MinkClientOptions): Promise<MinkClient> {
    // No Error (stack capture) per request: a request error names its subject and timeout itself.
    const nc = await connect({ servers: options.servers, name: options.name ?? 'mink-client', maxReconnectAttempts: -1, noAsyncTraces: true });
    return new MinkClient(nc, true, { appendsInFlightPerBucket: options.appendsInFlightPerBucket });
  }

  /** Wraps an existing connection (services that already have one); `close()` leaves it open. */
  static over(nc: NatsConnection, options: Pick<MinkClientOptions, 'appendsInFlightPerBucket'> = {}): MinkClient {
    return new MinkClient(nc, false, { appendsInFlightPerBucket: options.appendsInFlightPerBucket });
  }

  async createTable(spec: unknown): Promise<WithSeq<CreateTableResult>> {
    return this.coordinator<WithSeq<CreateTableResult>>({ op: 'createTable', spec });
  }

  async dropTable(name: string): Promise<WithSeq<{ tableId: number }>> {
    return this.coordinator<WithSeq<{ tableId: number }>>({ op: 'dropTable', name });
  }

  /** Changes a table's alterable properties (lake switch, freshness, retention TTL); null removes one. */
  async alterTable(name: string, properties: Record<string, string | null>): Promise<WithSeq<Record<string, never>>> {
    return this.coordinator<WithSeq<Record<string, never>>>({ op: 'alterTable', name, properties });
  }

  async rebalance(dryRun: boolean): Promise<WithSeq<RebalanceResult>> {
    return this.coordinator<WithSeq<RebalanceResult>>({ op: 'rebalance', dryRun });
  }

  /** A handle on one table; handles are cached, so their leader caches and writer ids are reused. */
  table(name: string): TableClient {
    let handle = this.tables.get(name);
    if (!handle) {
      handle = new TableClient(this.nc, name, this.tableOptions);
      this.tables.set(name, handle);
    }
    return handle;
  }

  /** Forgets a table's cached handle (after it was dropped and re-created). */
  forgetTable(name: string): void {
    this.tables.delete(name);
  }

  async coordinatorHolder(): Promise<HolderResult> {
    return this.coordinator<HolderResult>({ op: 'whoHolds' });
  }

  /** Sends a coordinator action, retrying while no coordinator can carry it out. */
  async coordinator<T>(request: CoordinatorRequest): Promise<T> {
    let lastError: unknown;
    for (let attempt = 0; attempt < LIMITS.clientAttemptsMax; attempt++) {
      try {
        return await requestJson<T>(this.nc, SUBJECTS.coordinatorRpc, request);
      } catch (error) {
        if (!(error instanceof MinkError) || error.code !== 'Unavailable') throw error;
        lastError = error;
        await sleep(error.details?.retryAfterMs ?? backoffDelayMs(attempt));
      }
    }
    throw lastError;
  }

  async close(): Promise<void> {
    if (this.ownsConnection) await this.nc.drain();
  }
}
