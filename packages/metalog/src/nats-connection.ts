import { ErrorCode, Events, NatsError, type Msg, type NatsConnection, type Payload, type RequestOptions } from 'nats';

/** nats.js's own default when a request names no timeout. */
const DEFAULT_REQUEST_TIMEOUT_MS = 1_000;

/**
 * Whether a NATS connection is up, followed through its status events, with hooks on every disconnect and
 * reconnect. One per connection (`connectionWatch`); it stops following when the connection closes.
 */
export class ConnectionWatch {
  private connected = true;
  private readonly disconnectListeners = new Set<() => void>();
  private readonly reconnectListeners = new Set<() => void>();

  constructor(connection: NatsConnection) {
    void (async () => {
      for await (const status of connection.status()) {
        if (status.type === Events.Disconnect) {
          this.connected = false;
          notify(this.disconnectListeners);
        } else if (status.type === Events.Reconnect) {
          this.connected = true;
          notify(this.reconnectListeners);
        }
      }
    })();
  }

  /** False from a disconnect until the reconnect that follows it. */
  isConnected(): boolean {
    return this.connected;
  }

  /** Calls `listener` at every disconnect; returns the unsubscribe function. */
  onDisconnect(listener: () => void): () => void {
    this.disconnectListeners.add(listener);
    return () => {
      this.disconnectListeners.delete(listener);
    };
  }

  /** Calls `listener` after every reconnect (subscriptions are re-established by then); returns the unsubscribe function. */
  onReconnect(listener: () => void): () => void {
    this.reconnectListeners.add(listener);
    return () => {
      this.reconnectListeners.delete(listener);
    };
  }
}

/** Calls every listener; one that throws is reported outside the loop, so it cannot stop the others. */
function notify(listeners: Set<() => void>): void {
  for (const listener of [...listeners]) {
    try {
      listener();
    } catch (error) {
      setImmediate(() => {
        throw error;
      });
    }
  }
}

const watches = new WeakMap<NatsConnection, ConnectionWatch>();

/**
 * The watch of `connection`, created on first use. A stand-in connection without `status()` (a unit test's
 * fake) gets none.
 */
export function connectionWatch(connection: NatsConnection): ConnectionWatch | null {
  if (typeof (connection as Partial<NatsConnection>).status !== 'function') return null;
  let watch = watches.get(connection);
  if (!watch) {
    watch = new ConnectionWatch(connection);
    watches.set(connection, watch);
  }
  return watch;
}

const guarded = new WeakSet<NatsConnection>();

/**
 * Makes every request on `connection` (JetStream publishes, KV operations and JetStream API calls go through
 * `request` too) behave sensibly across a lost server, which nats.js 2.29 does not do by itself:
 *
 * - A request made while the connection is down waits for the reconnect (within its own timeout) and is
 *   sent then. nats.js would write it into its outbound buffer, which each reconnect attempt empties, so it
 *   would never be sent and would wait out its whole timeout.
 * - A request in flight when the connection drops fails at once with a `TIMEOUT` NatsError (the outcome is
 *   unknown, exactly as for a timeout: the server may have acted on it), instead of waiting out a timeout
 *   for a reply that cannot come. Every caller already retries timeouts in a way that is safe to repeat
 *   (appends to the metadata log keep their message id, client writes their writer sequence, KV updates
 *   their expected revision), so the retry goes out right after the reconnect.
 *
 * Idempotent; returns the connection. Call it right after connecting, before anything uses the connection.
 */
export function failRequestsFastAcrossReconnects(connection: NatsConnection): NatsConnection {
  if (guarded.has(connection)) return connection;
  const watch = connectionWatch(connection);
  if (watch === null) return connection;
  guarded.add(connection);
  const request = connection.request.bind(connection);
  connection.request = (subject: string, payload?: Payload, options?: RequestOptions): Promise<Msg> =>
    new Promise<Msg>((resolve, reject) => {
      const timeoutMs = options?.timeout ?? DEFAULT_REQUEST_TIMEOUT_MS;
      const startedAtMs = Date.now();
      const send = (): void => {
        const remainingMs = Math.max(1, timeoutMs - (Date.now() - startedAtMs));
        const stopWatching = watch.onDisconnect(() => {
          stopWatching();
          reject(new NatsError(`no reply on ${subject}: the connection to NATS dropped while the request was in flight`, ErrorCode.Timeout));
        });
        request(subject, payload, { ...(options ?? {}), timeout: remainingMs } as RequestOptions).then(
          (reply) => {
            stopWatching();
            resolve(reply);
          },
          (error: unknown) => {
            stopWatching();
            reject(error);
          },
        );
      };
      if (watch.isConnected() || connection.isClosed()) {
        send();
        return;
      }
      // Down: send once the connection is back, unless the request's own time runs out first.
      const timer = setTimeout(() => {
        stopWaiting();
        reject(new NatsError(`no reply on ${subject}: the connection to NATS did not come back within ${timeoutMs} ms`, ErrorCode.Timeout));
      }, timeoutMs);
      const stopWaiting = watch.onReconnect(() => {
        stopWaiting();
        clearTimeout(timer);
        send();
      });
    });
  return connection;
}
