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

/**
 * A request may carry binary bytes next to its JSON (an Arrow batch, say) without encoding them as text:
 * the message is then this marker byte (which no JSON text starts with), the JSON's length as a 32-bit
 * little-endian integer, the JSON, and the bytes. The server hands the bytes to its handler as the body's
 * `BINARY_FIELD` property.
 */
const BINARY_MARKER = 0x00;
const BINARY_HEADER_BYTES = 5;
export const BINARY_FIELD = 'batch';

/** The message of `value` with `bytes` (one array, or parts sent back to back) after it. */
export function encodeWithBinary(value: object, bytes: Uint8Array | readonly Uint8Array[]): Uint8Array {
  const json = Buffer.from(JSON.stringify(value));
  const parts = bytes instanceof Uint8Array ? [bytes] : bytes;
  let total = BINARY_HEADER_BYTES + json.byteLength;
  for (const part of parts) total += part.byteLength;
  // Not zero-filled: every byte is written below.
  const out = Buffer.allocUnsafe(total);
  out[0] = BINARY_MARKER;
  out.writeUInt32LE(json.byteLength, 1);
  json.copy(out, BINARY_HEADER_BYTES);
  let position = BINARY_HEADER_BYTES + json.byteLength;
  for (const part of parts) {
    out.set(part, position);
    position += part.byteLength;
  }
  return out;
}

/** Decodes a request: JSON, or JSON with binary bytes (see `encodeWithBinary`), which land in `body[BINARY_FIELD]`. */
export function decodeRequest(data: Uint8Array): unknown {
  if (data.length === 0) return {};
  if (data[0] !== BINARY_MARKER) return decodeJson<unknown>(data);
  if (data.length < BINARY_HEADER_BYTES) throw new InvalidArgumentError('a binary request is shorter than its header');
  const jsonBytes = new DataView(data.buffer, data.byteOffset, data.byteLength).getUint32(1, true);
  if (BINARY_HEADER_BYTES + jsonBytes > data.length) throw new InvalidArgumentError(`a binary request announces ${jsonBytes} bytes of JSON but holds ${data.length - BINARY_HEADER_BYTES}`);
  const body = decodeJson<unknown>(data.subarray(BINARY_HEADER_BYTES, BINARY_HEADER_BYTES + jsonBytes));
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidArgumentError('the JSON of a binary request must be an object');
  return { ...body, [BINARY_FIELD]: data.subarray(BINARY_HEADER_BYTES + jsonBytes) };
}

export async function requestJson<T>(
  nc: NatsConnection,
  subject: string,
  body: unknown,
  timeoutMs: number = LIMITS.requestTimeoutMs,
  binary?: Uint8Array,
): Promise<T> {
  let reply: Msg;
  const payload = binary === undefined ? encodeJson(body) : encodeWithBinary(body as object, binary);
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
  const decoded = decodeRequest(reply.data) as { result: T; [BINARY_FIELD]?: Uint8Array };
  if (isErrorBody(decoded)) throw fromErrorBody(decoded);
  const bytes = decoded[BINARY_FIELD];
  if (bytes === undefined) return decoded.result;
  return { ...decoded.result, [BINARY_FIELD]: bytes } as T;
}

/**
 * What a handler returns to answer with binary bytes next to its JSON result (see `encodeWithBinary`):
 * the caller of `requestJson` gets the result with the bytes as its `BINARY_FIELD` property.
 */
export class WithBinary {
  constructor(
    readonly result: object,
    /** One array, or parts to send back to back (copied once, into the message). */
    readonly bytes: Uint8Array | readonly Uint8Array[],
  ) {}
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
      void answerRequest(nc, msg, handler, options.onError);
    },
  });
}

/**
 * Answers one request message the way every mink NATS endpoint does (`serveJson`, and the Nest transport of
 * @mink/runtime): decodes its body (JSON, or JSON with binary bytes), runs `handler`, and responds with
 * `{result}`, with the result and its bytes (`WithBinary`), or with the error body of what the handler threw
 * (a `MinkError` keeps its code and details; anything else is `Internal` and also goes to `onError`). A
 * message without a reply subject is handled and not answered. Never rejects.
 */
export async function answerRequest(nc: NatsConnection, msg: Msg, handler: RpcHandler, onError?: (error: unknown) => void): Promise<void> {
  let reply: unknown;
  try {
    let body: unknown;
    try {
      body = decodeRequest(msg.data);
    } catch (error) {
      throw error instanceof MinkError ? error : new InvalidArgumentError(`the request is not JSON: ${error instanceof Error ? error.message : String(error)}`);
    }
    const result = await handler(body, msg);
    reply = result instanceof WithBinary ? result : { result };
  } catch (error) {
    if (!(error instanceof MinkError)) onError?.(error);
    reply = toErrorBody(error);
  }
  if (!msg.reply) return;
  let encoded = reply instanceof WithBinary ? encodeWithBinary({ result: reply.result }, reply.bytes) : encodeJson(reply);
  // nats.js has no server info while the connection is down (a NATS server restarting, or a failover in a NATS
  // cluster): the reply is then sent as it is, and lost with the connection like any other message.
  const maxPayload = nc.info?.max_payload;
  if (maxPayload !== undefined && encoded.length > maxPayload) {
    // An answer NATS cannot carry would leave the caller waiting for its timeout: say so instead.
    encoded = encodeJson(toErrorBody(new MinkError('Internal', `reply of ${encoded.length} bytes exceeds the NATS max payload of ${maxPayload}`)));
  }
  try {
    msg.respond(encoded);
  } catch (error) {
    // The connection closed while the handler ran (the process is stopping): nobody can be answered.
    onError?.(error);
  }
}

export { natsHeaders };
