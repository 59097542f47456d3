import { Catch, type INestApplication, type RpcExceptionFilter } from '@nestjs/common';
import { BaseRpcContext, NestMicroservice, Server, type CustomTransportStrategy, type MessageHandler } from '@nestjs/microservices';
import type { Msg, NatsConnection, Subscription } from 'nats';
import { isObservable, lastValueFrom, throwError, type Observable } from 'rxjs';
import { answerRequest } from '@mink/transport';

/** Where the handler of one message pattern is served: a NATS subject, in a queue group when `queue` is set. */
export interface NatsRequestRoute {
  subject: string;
  /** Members of one queue group share the subject's requests, each answered by one of them (NATS picks which). */
  queue?: string;
}

/** The `@Ctx()` of a handler served by `NatsRequestTransport`: the NATS message being answered. */
export class NatsRequestContext extends BaseRpcContext<[Msg]> {
  getMessage(): Msg {
    return this.args[0];
  }

  getSubject(): string {
    return this.args[0].subject;
  }
}

export const NATS_REQUEST_TRANSPORT = Symbol('NatsRequestTransport');

/**
 * Serves a Nest application's `@MessagePattern` handlers as mink's NATS request/reply endpoints, byte for
 * byte as `serveJson` of @mink/transport serves them (both answer through `answerRequest`): the request is
 * JSON (or JSON with binary bytes after it), the reply `{result}` (or a `WithBinary` result), and a thrown
 * `MinkError` is its typed error body (`NotLeader` with its redirect, `Unavailable` with `retryAfterMs`, …).
 *
 * Nest's own NATS transport (`Transport.NATS`) was not used because it speaks Nest's packets
 * (`{pattern, data, id}` → `{response, err, isDisposed}`), which mink's clients do not, opens a
 * connection of its own next to the process's one, takes its subjects from the decorators (a data node's
 * subject holds its node id, known only at run time) and one queue group for them all, and turns a request
 * that cannot be decoded into an unhandled rejection. This transport subscribes the process's existing
 * connection, in the queue group of each route.
 *
 * Each pattern is a name chosen by the application (e.g. 'node.rpc'), mapped to its subject by `routes`. Only
 * patterns that have a handler are subscribed, so a request to a route without one finds no responder and
 * its caller gets `Unavailable` at once, as with any subject nobody serves. A handler without a route, or an
 * `@EventPattern` handler, fails `listen` (a wiring mistake, not something to serve around).
 *
 * Errors reach this transport only through `NatsRequestErrorFilter` (installed by `connectNatsRequests`):
 * Nest's default RPC filter would replace every error that is not an `RpcException` by
 * `{status: 'error', message: 'Internal server error'}` and lose its code.
 */
export class NatsRequestTransport extends Server implements CustomTransportStrategy {
  override readonly transportId = NATS_REQUEST_TRANSPORT;
  private subscriptions: Subscription[] = [];

  constructor(
    private readonly connection: NatsConnection,
    private readonly routes: Readonly<Record<string, NatsRequestRoute>>,
    /** Errors that are not `MinkError`s (answered as `Internal`) and failures of a subscription. */
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {
    super();
  }

  /** Subscribes every handled pattern's subject; `callback` gets the wiring mistake, if any, instead. */
  listen(callback: (error?: unknown) => void): void {
    let served: { route: NatsRequestRoute; handler: MessageHandler }[];
    try {
      served = [...this.messageHandlers].map(([pattern, handler]) => {
        if (handler.isEventHandler) throw new Error(`@EventPattern('${pattern}') is not served: mink's NATS endpoints answer every request`);
        const route = this.routes[pattern];
        if (route === undefined) throw new Error(`no NATS subject for the message pattern '${pattern}' (routes: ${Object.keys(this.routes).join(', ') || 'none'})`);
        return { route, handler };
      });
    } catch (error) {
      callback(error);
      return;
    }
    for (const { route, handler } of served) {
      const subscription = this.connection.subscribe(route.subject, {
        queue: route.queue,
        callback: (subscriptionError, msg) => {
          if (subscriptionError) {
            this.onError(subscriptionError);
            return;
          }
          void this.answer(handler, msg);
        },
      });
      this.subscriptions.push(subscription);
    }
    // A subscription reaches the server with the next write of the connection, and another connection's
    // request that arrives before the server has it finds no responder. The server answers a flush once it
    // has handled everything sent before it, so listening (and `startAllMicroservices`, and the readiness
    // that follows it) waits for that answer.
    this.connection.flush().then(
      () => {
        this._status$.next('listening');
        callback();
      },
      (error: unknown) => callback(error),
    );
  }

  /**
   * Unsubscribes, and resolves once nats-server has the unsubscriptions (a flush), so that once the
   * application is closed another connection's request finds no responder at once instead of reaching a
   * subscription that no longer answers and waiting out its timeout. The connection belongs to the process
   * (its `ClusterMember`) and stays open.
   */
  async close(): Promise<void> {
    const subscriptions = this.subscriptions;
    this.subscriptions = [];
    if (this.connection.isClosed()) return;
    for (const subscription of subscriptions) subscription.unsubscribe();
    this._status$.next('closed');
    // A connection closing meanwhile has no subscriptions left either.
    await this.connection.flush().catch(() => undefined);
  }

  /** The subjects subscribed now, in order (for tests and logs). */
  subjects(): string[] {
    return this.subscriptions.map((subscription) => subscription.getSubject());
  }

  on(): never {
    throw new Error('NatsRequestTransport emits no events: the connection belongs to the process');
  }

  unwrap<T>(): T {
    return this.connection as T;
  }

  private answer(handler: MessageHandler, msg: Msg): Promise<void> {
    const context = new NatsRequestContext([msg]);
    return answerRequest(
      this.connection,
      msg,
      async (body) => {
        // Nest's handler (pipes, guards, interceptors, filters around the controller method) resolves to the
        // method's value, or to an Observable: of a returned Observable, or of a filtered error.
        const answer: unknown = await handler(body, context);
        return isObservable(answer) ? lastValueFrom(answer, { defaultValue: undefined }) : answer;
      },
      this.onError,
    );
  }
}

/**
 * Hands every error of a NATS handler to `NatsRequestTransport` as it was thrown, so a `MinkError` keeps its
 * wire code (see the transport). The one RPC exception filter of mink's services.
 */
@Catch()
export class NatsRequestErrorFilter implements RpcExceptionFilter<unknown> {
  catch(exception: unknown): Observable<never> {
    return throwError(() => exception);
  }
}

/**
 * Connects the application's `NatsRequestTransport` (its provider of token `NATS_REQUEST_TRANSPORT`) as its
 * microservice: the controllers' `@MessagePattern` handlers are served on NATS once
 * `app.startAllMicroservices()` runs (`startService`). The listeners are registered then (deferred), after
 * the error filter is in place; the application's own `init` has run the lifecycle hooks, which the
 * microservice must not run a second time.
 */
export function connectNatsRequests(app: INestApplication): NestMicroservice {
  const transport = app.get<NatsRequestTransport>(NATS_REQUEST_TRANSPORT);
  const microservice = app.connectMicroservice<{ strategy: NatsRequestTransport }>({ strategy: transport }, { deferInitialization: true }) as NestMicroservice;
  microservice.useGlobalFilters(new NatsRequestErrorFilter());
  microservice.setIsInitHookCalled(true);
  return microservice;
}
