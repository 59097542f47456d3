import { connect, ErrorCode, Events, NatsError, type Msg, type NatsConnection, type Payload, type RequestOptions } from 'nats';
import { CLIENT_BACKOFF, LIMITS, backoffDelayMs, natsAuthOptions, natsTlsOptions, parseNatsServers, sleep, type NatsTlsFiles } from '@mink/config';
import { MinkError, SUBJECTS, type CoordinatorRequest, type CreateTableResult, type RebalanceResult, type HolderResult } from '@mink/protocol';
import { requestJson } from '@mink/transport';
import { HttpScanPages } from './http-scan-pages';
import { TableClient, type TableClientOptions } from './table-client';

export interface MinkClientOptions {
  /**
   * NATS server URL(s) of the cluster: an array, or one string that may list several separated by commas
   * (a `MINK_NATS_URL` value). The client reconnects to any of them, forever, when its server goes away.
   */
  servers: string | string[];
  /**
   * NATS user and password, for a cluster whose NATS servers ask for them (`mink up --secure` writes the
   * outside clients' identity to `secrets/nats-client.env` in its data dir, as `MINK_NATS_USER` and
   * `MINK_NATS_PASSWORD`). Both or none.
   */
  user?: string;
  pass?: string;
  /**
   * TLS to the NATS servers (what `MINK_NATS_TLS_CA_FILE`, `MINK_NATS_TLS_CERT_FILE` and
   * `MINK_NATS_TLS_KEY_FILE` name): the CA that signed their certificates, and a client certificate for
   * servers that ask for one. Absent: plain text, unless a server asks for TLS (then the system's authorities).
   */
  tls?: NatsTlsFiles;
  /** Name shown in NATS monitoring. */
  name?: string;
  /** Append requests in flight per bucket of a table (default LIMITS.writerRequestsInFlightMax). */
  appendsInFlightPerBucket?: number;
  /** Bytes of a bucket's waiting appends sent while another of its requests is in flight (see TableClientOptions). */
  pipelinedAppendBytesMin?: number;
  /**
   * Scan pages come from the leader's internal HTTP route when it has an HTTP address (default true);
   * false sends them over NATS like every other request.
   */
  scanOverHttp?: boolean;
  /**
   * The cluster secret (`MINK_CLUSTER_SECRET_FILE`), sent with scan page requests over HTTP. The services
   * of the cluster have it; a client outside it leaves it out, and scans each node that asks for it over
   * NATS instead (see HttpScanPages).
   */
  clusterSecret?: string;
}

/** What `MinkClient.over` takes: the options of its tables. */
export type MinkClientTableOptions = Pick<MinkClientOptions, 'appendsInFlightPerBucket' | 'pipelinedAppendBytesMin' | 'scanOverHttp' | 'clusterSecret'>;

/** Coordinator answers carry the metadata sequence at which their effect is visible. */
export type WithSeq<T> = T & { metaSeq: number };

/**
 * The TypeScript client of mink. It talks to the cluster over NATS, except that scan pages come straight
 * from the bucket leader's HTTP port (see HttpScanPages), which this process must be able to reach, as it
 * reaches the NATS servers (a node without an HTTP address is scanned over NATS). Coordinator actions go to
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

  private static tableOptionsOf(options: MinkClientTableOptions): TableClientOptions {
    return {
      appendsInFlightPerBucket: options.appendsInFlightPerBucket,
      pipelinedAppendBytesMin: options.pipelinedAppendBytesMin,
      // One pool of connections per client, shared by its tables.
      ...(options.scanOverHttp === false ? {} : { httpScans: new HttpScanPages(options.clusterSecret === undefined ? {} : { clusterSecret: options.clusterSecret }) }),
    };
  }

  static async connect(options: MinkClientOptions): Promise<MinkClient> {
    // No Error (stack capture) per request: a request error names its subject and timeout itself.
    const servers = typeof options.servers === 'string' ? parseNatsServers(options.servers, 'servers') : options.servers;
    if ((options.user === undefined) !== (options.pass === undefined)) throw new Error('MinkClient.connect: give user and pass together, or neither');
    const credentials = options.user === undefined ? null : { user: options.user, password: options.pass! };
    const nc = failRequestsFastOnReconnect(
      await connect({
        servers,
        name: options.name ?? 'mink-client',
        maxReconnectAttempts: -1,
        reconnectTimeWait: 250,
        noAsyncTraces: true,
        // Replies come under the client's own prefix: a secure cluster lets its client identity subscribe there only.
        inboxPrefix: SUBJECTS.clientInboxPrefix,
        ...natsAuthOptions(credentials),
        ...natsTlsOptions(options.tls),
      }),
    );
    return new MinkClient(nc, true, MinkClient.tableOptionsOf(options));
  }

  /** Wraps an existing connection (services that already have one); `close()` leaves it open. */
  static over(nc: NatsConnection, options: MinkClientTableOptions = {}): MinkClient {
    return new MinkClient(nc, false, MinkClient.tableOptionsOf(options));
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

  /** Kafka's DeleteRecords: bucket `bucket` of log table `table` starts at `offset` (-1: its high watermark); answers its start after. */
  async deleteRecords(table: string, bucket: number, offset: number): Promise<WithSeq<{ startOffset: number }>> {
    return this.coordinator<WithSeq<{ startOffset: number }>>({ op: 'deleteRecords', table, bucket, offset });
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
        await sleep(error.details?.retryAfterMs ?? backoffDelayMs(attempt + 1, CLIENT_BACKOFF, Math.random));
      }
    }
    throw lastError;
  }

  /** Closes the scan connections, and the NATS connection if this client opened it. */
  async close(): Promise<void> {
    this.tableOptions.httpScans?.close();
    if (this.ownsConnection) await this.nc.drain();
  }
}

/**
 * Requests of a client's own connection across a lost NATS server (kill -9, restart, failover in a NATS
 * cluster). nats.js 2.29 empties its outbound buffer at every reconnect attempt, so a request made while
 * the connection is down is never sent, and a request in flight when the server dies waits out its whole
 * timeout (10 s for a bucket request) for a reply that cannot come. Here a request made while down waits
 * for the reconnect (within its own timeout) and is sent then, and one in flight when the connection drops
 * fails at once with nats.js's TIMEOUT code, which every caller already treats as "outcome unknown" and
 * retries safely (appends keep their writer sequence). Services get the same from
 * `failRequestsFastAcrossReconnects` in @mink/metalog, which this package cannot depend on.
 */
function failRequestsFastOnReconnect(nc: NatsConnection): NatsConnection {
  let connected = true;
  const onDisconnect = new Set<() => void>();
  const onReconnect = new Set<() => void>();
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === Events.Disconnect) {
        connected = false;
        for (const listener of [...onDisconnect]) listener();
      } else if (status.type === Events.Reconnect) {
        connected = true;
        for (const listener of [...onReconnect]) listener();
      }
    }
  })();
  const request = nc.request.bind(nc);
  nc.request = (subject: string, payload?: Payload, options?: RequestOptions): Promise<Msg> =>
    new Promise<Msg>((resolve, reject) => {
      const timeoutMs = options?.timeout ?? 1_000;
      const startedAtMs = Date.now();
      const send = (): void => {
        const dropped = (): void => {
          onDisconnect.delete(dropped);
          reject(new NatsError(`no reply on ${subject}: the connection to NATS dropped while the request was in flight`, ErrorCode.Timeout));
        };
        onDisconnect.add(dropped);
        request(subject, payload, { ...(options ?? {}), timeout: Math.max(1, timeoutMs - (Date.now() - startedAtMs)) } as RequestOptions).then(
          (reply) => {
            onDisconnect.delete(dropped);
            resolve(reply);
          },
          (error: unknown) => {
            onDisconnect.delete(dropped);
            reject(error);
          },
        );
      };
      if (connected || nc.isClosed()) {
        send();
        return;
      }
      const reconnected = (): void => {
        onReconnect.delete(reconnected);
        clearTimeout(timer);
        send();
      };
      const timer = setTimeout(() => {
        onReconnect.delete(reconnected);
        reject(new NatsError(`no reply on ${subject}: the connection to NATS did not come back within ${timeoutMs} ms`, ErrorCode.Timeout));
      }, timeoutMs);
      onReconnect.add(reconnected);
    });
  return nc;
}
