import { once } from 'node:events';
import {
  Server,
  ServerCredentials,
  ServerInterceptingCall,
  status as GrpcStatus,
  type Metadata,
  type ServerInterceptor,
  type ServerReadableStream,
  type ServerUnaryCall,
  type ServerWritableStream,
  type ServiceDefinition,
  type UntypedServiceImplementation,
  type sendUnaryData,
} from '@grpc/grpc-js';
import { ReflectionService } from '@grpc/reflection';
import { LIMITS } from '@mink/config';
import { authorize, clusterQueryOf, readGroupParameter, unauthenticatedErrorOf, type AccessNeed, type AccessPolicy, type AccessScope, type GatewayService } from '@mink/http-api';
import { InvalidArgumentError, MinkError, UnavailableError, type ScanPage } from '@mink/protocol';
import { InFlightBytes, newErrorId } from '@mink/runtime';
import { grpcFailureOf, inFlightRefusal, isExpectedFailure, statusOfFailure } from './grpc-errors';
import { HeldMessages, type CallHolding } from './held-messages';
import { HEALTH_SERVICE, MINK_SERVICE, loadGatewayProtos, loadReflectedProtos } from './proto';
import {
  alterTableBody,
  columnsOf,
  createTableBody,
  readJsonArray,
  readScanRequest,
  readTableName,
  type AlterTableMessage,
  type CreateTableMessage,
  type ScanMessage,
} from './requests';
import { clusterStatusOf, kafkaGroupsResponseOf, lookupResponseOf, prefixLookupResponseOf, rangesOf, rebalanceResponseOf, scanResponseOf, tableDescriptionOf, writeResultOf } from './responses';

export interface GrpcGatewayOptions {
  gateway: GatewayService;
  /** Bearer tokens, checked by the HTTP API's `authorize`; null: no credentials asked for. */
  policy: AccessPolicy | null;
  /** Whether the gateway can serve (its /readyz): what the health service answers. */
  isReady: () => boolean;
  logger?: { error(object: object, message: string): void };
  /** A PEM certificate chain and its private key: the listener then speaks TLS only. Absent or null: plain text. */
  tls?: { cert: Buffer; key: Buffer } | null;
  /** The bound on bytes of request messages held at once; absent: `LIMITS.grpcInFlightMessageBytesMax`. */
  inFlight?: InFlightBytes;
}

/**
 * The grpc-js server options of the listener: the message sizes, the calls one connection may have open (a
 * client queues more until one ends), and closing idle or silent connections (see LIMITS).
 */
export const GRPC_SERVER_OPTIONS = {
  'grpc.max_receive_message_length': LIMITS.grpcMessageBytesMax,
  'grpc.max_send_message_length': LIMITS.grpcMessageBytesMax,
  'grpc.max_concurrent_streams': LIMITS.grpcConcurrentStreamsPerConnectionMax,
  'grpc.max_connection_idle_ms': LIMITS.grpcConnectionIdleMs,
  'grpc.keepalive_time_ms': LIMITS.grpcKeepaliveTimeMs,
  'grpc.keepalive_timeout_ms': LIMITS.grpcKeepaliveTimeoutMs,
} as const;

interface TableMessage {
  table: string;
}

/** Thrown into a call's wait when the call is cancelled or the listener stops. */
class CallAborted extends Error {}

/**
 * The gateway's gRPC listener (mink.proto): every method is a check of the caller's bearer token with the
 * same rule and scopes as the HTTP routes, then one GatewayService call, its answer shaped by responses.ts
 * and its failure mapped by grpc-errors.ts. A refused call never reaches the service. `grpc.health.v1` and
 * server reflection ask for no token.
 *
 * Ordering: an Append call appends each message, durably, before it reads the next; a Scan sends pages in
 * offset order. On `stop`, following scans and health watches end at once (UNAVAILABLE for the scans, so a
 * client resumes elsewhere from its last `next_offset`), other calls get `grpcShutdownGraceMs` to finish.
 *
 * Exhaustion (GRPC_SERVER_OPTIONS and `admission`): with a policy, a Mink call whose metadata carries no
 * issued token is refused UNAUTHENTICATED before any of its messages is decoded; the bytes of the messages
 * handlers hold count against one bound (`HeldMessages`), past which a call ends RESOURCE_EXHAUSTED.
 */
export class GrpcGateway {
  private readonly server: Server;
  private readonly stopping = new AbortController();
  private readonly gateway: GatewayService;
  private readonly held: HeldMessages;

  constructor(private readonly options: GrpcGatewayOptions) {
    this.gateway = options.gateway;
    this.held = new HeldMessages(options.inFlight ?? new InFlightBytes(LIMITS.grpcInFlightMessageBytesMax));
    this.server = new Server({ ...GRPC_SERVER_OPTIONS, interceptors: [this.admission()] });
    const definition = loadGatewayProtos();
    this.server.addService(readingAnyBytes(definition[MINK_SERVICE] as ServiceDefinition, this.held), this.minkHandlers());
    this.server.addService(definition[HEALTH_SERVICE] as ServiceDefinition, this.healthHandlers());
    new ReflectionService(loadReflectedProtos()).addToServer(this.server);
  }

  /** Binds `host:port` (0: a free port) and resolves with the port bound. */
  listen(host: string, port: number): Promise<number> {
    const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
    return new Promise((resolve, reject) => {
      this.server.bindAsync(address, this.credentials(), (error, boundPort) => (error ? reject(new Error(`gRPC listener on ${address}: ${error.message}`)) : resolve(boundPort)));
    });
  }

  /** TLS with the gateway's certificate when it has one (no client certificate asked for: callers give bearer tokens), else plain text. */
  private credentials(): ServerCredentials {
    const { tls } = this.options;
    return tls ? ServerCredentials.createSsl(null, [{ cert_chain: tls.cert, private_key: tls.key }], false) : ServerCredentials.createInsecure();
  }

  /** Ends following scans and health watches, lets other calls finish for `graceMs`, then cancels what is left. */
  async stop(graceMs: number = LIMITS.grpcShutdownGraceMs): Promise<void> {
    this.stopping.abort();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, graceMs);
      this.server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private minkHandlers(): UntypedServiceImplementation {
    const { gateway } = this;
    const onTable = (scope: AccessScope) => (request: TableMessage) => ({ scope, table: request.table || undefined });
    const onCluster = (scope: AccessScope) => () => ({ scope });
    return {
      CreateTable: this.unary('CreateTable', (request: CreateTableMessage) => ({ scope: 'admin', table: request.name || undefined }), async (request: CreateTableMessage) =>
        tableDescriptionOf(await gateway.createTable(createTableBody(request))),
      ),
      ListTables: this.unary('ListTables', onCluster('read'), async () => ({ tables: (await gateway.listTables()).tables.map(tableDescriptionOf) })),
      DescribeTable: this.unary('DescribeTable', (request: { name: string }) => ({ scope: 'read', table: request.name || undefined }), async (request: { name: string }) =>
        tableDescriptionOf(await gateway.describeTable(readTableName(request.name, 'name'))),
      ),
      AlterTable: this.unary('AlterTable', (request: AlterTableMessage) => ({ scope: 'admin', table: request.name || undefined }), async (request: AlterTableMessage) =>
        tableDescriptionOf(await gateway.alterTable(readTableName(request.name, 'name'), alterTableBody(request))),
      ),
      DropTable: this.unary('DropTable', (request: { name: string }) => ({ scope: 'admin', table: request.name || undefined }), (request: { name: string }) =>
        gateway.dropTable(readTableName(request.name, 'name')),
      ),
      Append: (call: ServerReadableStream<TableMessage & { rowsJson: string }, unknown>, callback: sendUnaryData<unknown>) => void this.append(call, callback),
      Put: this.unary('Put', onTable('write'), async (request: TableMessage & { rowsJson: string; columns: string[] }) =>
        writeResultOf(await gateway.put(readTableName(request.table), { rows: readJsonArray(request.rowsJson, 'rows_json'), ...columnsOf(request.columns) })),
      ),
      Delete: this.unary('Delete', onTable('write'), async (request: TableMessage & { keysJson: string }) =>
        writeResultOf(await gateway.delete(readTableName(request.table), { keys: readJsonArray(request.keysJson, 'keys_json') })),
      ),
      Lookup: this.unary('Lookup', onTable('read'), async (request: TableMessage & { keysJson: string; columns: string[] }) =>
        lookupResponseOf(await gateway.lookup(readTableName(request.table), { keys: readJsonArray(request.keysJson, 'keys_json'), ...columnsOf(request.columns) })),
      ),
      PrefixLookup: this.unary('PrefixLookup', onTable('read'), async (request: TableMessage & { prefixesJson: string; columns: string[]; limit?: number }) =>
        prefixLookupResponseOf(
          await gateway.prefixLookup(readTableName(request.table), {
            prefixes: readJsonArray(request.prefixesJson, 'prefixes_json'),
            ...columnsOf(request.columns),
            ...(request.limit === undefined ? {} : { limit: request.limit }),
          }),
        ),
      ),
      Scan: (call: ServerWritableStream<ScanMessage, unknown>) => void this.scan(call),
      // The table filter is checked as GET /v1/cluster's ?table= is; a token for some tables reads neither (the answer names every table).
      ClusterStatus: this.unary('ClusterStatus', onCluster('read'), async (request: { omitBuckets: boolean; table?: string }) =>
        clusterStatusOf(await gateway.clusterStatus(clusterQueryOf(!request.omitBuckets, request.table, 'omit_buckets'))),
      ),
      Rebalance: this.unary('Rebalance', onCluster('admin'), async (request: { dryRun: boolean }) => rebalanceResponseOf(await gateway.rebalance(request.dryRun))),
      KafkaGroups: this.unary('KafkaGroups', onCluster('read'), async (request: { group?: string }) => kafkaGroupsResponseOf(await gateway.kafkaGroups(readGroupParameter(request.group)))),
    };
  }

  /** A unary method: the token checked for `need`, then `answer`; any failure goes out as its status. */
  private unary<Request>(method: string, need: (request: Request) => AccessNeed, answer: (request: Request) => unknown) {
    return (call: ServerUnaryCall<Request, unknown>, callback: sendUnaryData<unknown>): void => {
      void (async () => {
        try {
          refuseUndecodable(call.request, method);
          this.authorize(call.metadata, need(call.request));
          callback(null, await answer(call.request));
        } catch (error) {
          callback(this.failure(error, method));
        }
      })();
    };
  }

  /**
   * Client-streaming Append: the first message names the table and is checked against the token before
   * anything is appended; each message is then one GatewayService append, in order.
   */
  private async append(call: ServerReadableStream<TableMessage & { rowsJson: string }, unknown>, callback: sendUnaryData<unknown>): Promise<void> {
    let table: string | undefined;
    let messages = 0;
    let appended = 0;
    const ranges: ReturnType<typeof rangesOf>[number][] = [];
    try {
      for await (const message of call as AsyncIterable<TableMessage & { rowsJson: string }>) {
        messages++;
        refuseUndecodable(message, `Append message ${messages}`);
        if (table === undefined) {
          this.authorize(call.metadata, { scope: 'write', table: message.table || undefined });
          table = readTableName(message.table);
        } else if (message.table !== '' && message.table !== table) {
          throw new InvalidArgumentError(`message ${messages}: table '${message.table}' is not '${table}', the table of the first message`);
        }
        const rows = readJsonArray(message.rowsJson, `message ${messages}: rows_json`);
        // The rows are decoded: the message's bytes are no longer held (the rows are, until appended).
        this.held.release(message);
        const result = await this.gateway.append(table, { rows }).catch((error: unknown) => {
          throw withMessageNumber(error, messages);
        });
        appended += result.appended;
        ranges.push(...rangesOf(result.buckets));
      }
      if (table === undefined) {
        this.authorize(call.metadata, { scope: 'write' });
        throw new InvalidArgumentError('an Append call needs at least one message naming its table');
      }
      callback(null, { appended, messages, ranges });
    } catch (error) {
      callback(this.failure(error, 'Append'));
    }
  }

  /**
   * Server-streaming Scan: the pages of GatewayService.openScan, one message each; with `follow`, a new
   * long-polling scan from where the last one ended, again and again, until the limit or a cancellation.
   */
  private async scan(call: ServerWritableStream<ScanMessage, unknown>): Promise<void> {
    const cancelled = new AbortController();
    call.on('cancelled', () => cancelled.abort());
    const aborted = AbortSignal.any([cancelled.signal, this.stopping.signal]);
    try {
      refuseUndecodable(call.request, 'Scan');
      this.authorize(call.metadata, { scope: 'read', table: call.request.table || undefined });
      const plan = readScanRequest(call.request);
      let offset = plan.parameters.offset;
      let sent = 0;
      for (;;) {
        const scan = await untilAborted(this.gateway.openScan(plan.table, { ...plan.parameters, offset, limit: Math.min(plan.recordsMax - sent, LIMITS.scanRecordsMax) }), aborted);
        let page: ScanPage = scan.first;
        try {
          for (;;) {
            // A plain scan answers even when it found nothing (the client learns the high watermark); a follow sends records only.
            if (!plan.follow || page.records > 0) {
              if (!call.write(scanResponseOf(page, plan.format))) await once(call, 'drain', { signal: aborted });
              sent += page.records;
            }
            offset = Math.max(offset, page.nextOffset);
            const next = await untilAborted(scan.rest.next(), aborted);
            if (next.done) break;
            page = next.value;
          }
        } finally {
          void scan.rest.return?.(undefined)?.catch(() => undefined);
        }
        if (!plan.follow || sent >= plan.recordsMax) break;
      }
      call.end();
    } catch (error) {
      if (cancelled.signal.aborted) return;
      const failure = this.stopping.signal.aborted ? new UnavailableError('the gateway is shutting down: scan again from the last next_offset') : error;
      call.emit('error', this.failure(failure, 'Scan'));
    }
  }

  /** grpc.health.v1: SERVING while the gateway is ready (its /readyz) and not stopping, for '' and the Mink service. */
  private healthHandlers(): UntypedServiceImplementation {
    const known = new Set(['', MINK_SERVICE]);
    const statusOf = (service: string): string => (!known.has(service) ? 'SERVICE_UNKNOWN' : this.options.isReady() && !this.stopping.signal.aborted ? 'SERVING' : 'NOT_SERVING');
    return {
      Check: (call: ServerUnaryCall<{ service: string }, unknown>, callback: sendUnaryData<unknown>) => {
        if (!known.has(call.request.service)) callback({ code: GrpcStatus.NOT_FOUND, details: `unknown service '${call.request.service}'` });
        else callback(null, { status: statusOf(call.request.service) });
      },
      Watch: (call: ServerWritableStream<{ service: string }, unknown>) => {
        let last = statusOf(call.request.service);
        call.write({ status: last });
        const timer = setInterval(() => {
          const now = statusOf(call.request.service);
          if (now !== last) call.write({ status: (last = now) });
        }, LIMITS.grpcHealthWatchIntervalMs);
        const end = (): void => {
          clearInterval(timer);
          this.stopping.signal.removeEventListener('abort', ended);
        };
        const ended = (): void => {
          end();
          call.end();
        };
        call.on('cancelled', end);
        this.stopping.signal.addEventListener('abort', ended);
      },
    };
  }

  private authorize(metadata: Metadata, need: AccessNeed): void {
    if (this.options.policy === null) return;
    const header = metadata.get('authorization')[0];
    authorize(this.options.policy, typeof header === 'string' ? header : undefined, need);
  }

  /** The status of a call that failed with `error`; a bug or an Internal error is logged with the id its status carries. */
  private failure(error: unknown, method: string) {
    const errorId = newErrorId();
    if (!isExpectedFailure(error)) this.options.logger?.error({ err: error, method, errorId }, 'gRPC call failed');
    return statusOfFailure(grpcFailureOf(error, method, errorId));
  }

  /**
   * The interceptor of every call, before its handler: with a policy, a call of the Mink service whose
   * metadata carries no token the policy issued ends UNAUTHENTICATED before any message of it is read (the
   * handler then checks scopes and tables); each message a handler is handed takes its bytes from `held`,
   * or ends its call RESOURCE_EXHAUSTED when they do not fit; the call's bytes are given back when it ends.
   */
  private admission(): ServerInterceptor {
    return (method, call) => {
      const name = method.path.split('/').pop() ?? method.path;
      const guarded = this.options.policy !== null && method.path.startsWith(`/${MINK_SERVICE}/`);
      const holding: CallHolding = new Set();
      return new ServerInterceptingCall(call, {
        start: (next) =>
          next({
            onReceiveMetadata: (metadata, nextMetadata) => {
              const header = metadata.get('authorization')[0];
              const refusal = guarded ? unauthenticatedErrorOf(this.options.policy!, typeof header === 'string' ? header : undefined) : null;
              if (refusal !== null) return call.sendStatus(this.failure(refusal, name));
              nextMetadata(metadata);
            },
            onReceiveMessage: (message, nextMessage) => {
              if (!this.held.admit(message, holding)) {
                return call.sendStatus(statusOfFailure(inFlightRefusal(this.held.heldBytes, this.held.sizeOf(message) ?? 0, LIMITS.grpcInFlightRetryAfterMs)));
              }
              nextMessage(message);
            },
            onCancel: () => this.held.releaseCall(holding),
          }),
        sendStatus: (status, nextStatus) => {
          this.held.releaseCall(holding);
          nextStatus(status);
        },
      });
    };
  }
}

/** A request whose bytes are not a message of its type; the handler refuses it as INVALID_ARGUMENT. */
class UndecodableRequest {
  constructor(readonly reason: string) {}
}

/**
 * `service` with request decoders that never throw: grpc-js answers a decoder's exception with INTERNAL, but
 * bytes that are not the request's message are the caller's mistake, so they reach the handler as an
 * UndecodableRequest to be refused with INVALID_ARGUMENT. Each decoded request is `measured` in `held`.
 */
function readingAnyBytes(service: ServiceDefinition, held: HeldMessages): ServiceDefinition {
  return Object.fromEntries(
    Object.entries(service).map(([name, method]) => [
      name,
      {
        ...method,
        requestDeserialize: (bytes: Buffer): unknown => {
          try {
            return held.measured(method.requestDeserialize(bytes), bytes.length);
          } catch (error) {
            return held.measured(new UndecodableRequest(error instanceof Error ? error.message : String(error)), bytes.length);
          }
        },
      },
    ]),
  ) as ServiceDefinition;
}

function refuseUndecodable(request: unknown, what: string): void {
  if (request instanceof UndecodableRequest) throw new InvalidArgumentError(`${what}: the request is not a valid message of its type (${request.reason})`);
}

/** `promise`, or a CallAborted rejection as soon as `signal` fires; `promise` is then left to settle unobserved. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  promise.catch(() => undefined);
  if (signal.aborted) return Promise.reject(new CallAborted('the call ended'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new CallAborted('the call ended'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** An append's failure, naming the message of the stream it came from. */
function withMessageNumber(error: unknown, message: number): unknown {
  if (!(error instanceof MinkError)) return error;
  return new MinkError(error.code, `message ${message}: ${error.message}`, error.details);
}
