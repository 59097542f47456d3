import { headers as natsHeaders, type NatsConnection, type Subscription, type Msg } from 'nats';
import { LIMITS } from '@mink/config';
import { InvalidArgumentError, MinkError, TimeoutError, UnavailableError, fromErrorBody, isErrorBody, toErrorBody } from '@mink/protocol';

/**
 * JSON request/reply over NATS. A reply is either `{result}` or an error body `{error:{code,…}}`; the
 * caller gets the result or a `MinkError` with the same code, so every wire maps errors in one place.
 */
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

export function decodeJson<T>(data: Uint8Array): T {
  return JSON.parse(decoder.decode(data)) as T;
}

export async function requestJson<T>(
  nc: NatsConnection,
  subject: string,
  body: unknown,
  timeoutMs: number = LIMITS.requestTimeoutMs,
): Promise<T> {
  let reply: Msg;
  const payload = encodeJson(body);
  try {
    reply = await nc.request(subject, payload, { timeout: timeoutMs });
  } catch (error) {
    const code = (error as { code?: string }).code;
    // Too big for one NATS message: the request itself is wrong (a table of 100 000 columns, say), not the cluster.
    if (code === 'MAX_PAYLOAD_EXCEEDED') {
      throw new InvalidArgumentError(`the request is ${payload.length} bytes, more than the ${nc.info?.max_payload ?? 'server'} bytes one message may hold`);
    }
    if (code === '503') throw new UnavailableError(`no process answers on ${subject}`);
    if (code === 'TIMEOUT' || code === 'timeout') throw new TimeoutError(`no reply on ${subject} within ${timeoutMs} ms`);
    throw error;
  }
  const decoded = decodeJson<unknown>(reply.data);
  if (isErrorBody(decoded)) throw fromErrorBody(decoded);
  return (decoded as { result: T }).result;
}

export type RpcHandler = (body: unknown, msg: Msg) => Promise<unknown>;

/**
 * Serves JSON requests on `subject`. Each request runs concurrently; a thrown `MinkError` becomes its
 * error body, anything else an `Internal` error, and the serving process never crashes on bad input.
 */
export function serveJson(
  nc: NatsConnection,
  subject: string,
  handler: RpcHandler,
  options: { queue?: string; onError?: (error: unknown) => void } = {},
): Subscription {
  return nc.subscribe(subject, {
    queue: options.queue,
    callback: (subscriptionError, msg) => {
      if (subscriptionError) {
        options.onError?.(subscriptionError);
        return;
      }
      void (async () => {
        let reply: unknown;
        try {
          const body = msg.data.length ? decodeJson<unknown>(msg.data) : {};
          reply = { result: await handler(body, msg) };
        } catch (error) {
          if (!(error instanceof MinkError)) options.onError?.(error);
          reply = toErrorBody(error);
        }
        if (!msg.reply) return;
        let encoded = encodeJson(reply);
        if (encoded.length > nc.info!.max_payload) {
          // An answer NATS cannot carry would leave the caller waiting for its timeout: say so instead.
          encoded = encodeJson(toErrorBody(new MinkError('Internal', `reply of ${encoded.length} bytes exceeds the NATS max payload of ${nc.info!.max_payload}`)));
        }
        msg.respond(encoded);
      })();
    },
  });
}

export { natsHeaders };
