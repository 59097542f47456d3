import { headers as natsHeaders, type NatsConnection, type Subscription, type Msg } from 'nats';
import { LIMITS } from '@mink/config';
import { InvalidArgumentError, MinkError, TimeoutError, UnavailableError, fromErrorBody, isErrorBody, toErrorBody } from '@mink/protocol';
import { decodeMultiMessage, groupForMultiMessages, isMultiMessage, multiMessagePieces } from './multi-message';
import { REPLY_SEAL_BYTES, REQUEST_SEAL_BYTES, openReply, openRequest, sealReply, sealRequest, type Opened } from './seal';

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
  return joinParts(withBinaryParts(value, bytes));
}

/** The message `encodeWithBinary` writes, as parts to send back to back: its header and JSON, then `bytes`. */
function withBinaryParts(value: object, bytes: Uint8Array | readonly Uint8Array[]): Uint8Array[] {
  const json = Buffer.from(JSON.stringify(value));
  const head = Buffer.allocUnsafe(BINARY_HEADER_BYTES + json.byteLength);
  head[0] = BINARY_MARKER;
  head.writeUInt32LE(json.byteLength, 1);
  json.copy(head, BINARY_HEADER_BYTES);
  return [head, ...(bytes instanceof Uint8Array ? [bytes] : bytes)];
}

/** `parts` back to back in one array (the one part itself when there is one). */
function joinParts(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  // Not zero-filled: every byte is written below.
  const out = Buffer.allocUnsafe(byteLengthOf(parts));
  let position = 0;
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

export interface RequestOptions {
  /**
   * Requests with the same `coalesce.key`, subject and timeout that a process issues in one turn of the
   * event loop travel as one multi message (see multi-message.ts) and come back as one reply holding each
   * one's answer: one NATS message per node for a call's writes to several buckets, instead of one per
   * bucket. Requests with the same `coalesce.apart` never share a message (a bucket's writes keep fates of
   * their own: one lost or refused does not take another of the bucket with it). Each request is still
   * answered, fails and times out as it would alone, but the multi reply waits for the slowest: only for
   * requests whose answers take about as long as each other (the writes a node puts in its next WAL object).
   */
  coalesce?: { key: string; apart?: string };
}

export async function requestJson<T>(
  nc: NatsConnection,
  subject: string,
  body: unknown,
  timeoutMs: number = LIMITS.requestTimeoutMs,
  binary?: Uint8Array,
  options: RequestOptions = {},
): Promise<T> {
  let replyData: Uint8Array;
  // The parts are copied once, into the sealed message that carries the request (alone or with others).
  const parts = binary === undefined ? [encodeJson(body)] : withBinaryParts(body as object, binary);
  try {
    replyData =
      options.coalesce === undefined
        ? await requestSealed(nc, subject, parts, timeoutMs)
        : await coalescerOf(nc).request(options.coalesce, subject, parts, timeoutMs);
  } catch (error) {
    const code = (error as { code?: string }).code;
    // Too big for one NATS message: the request itself is wrong (a table of 100 000 columns, say), not the cluster.
    if (code === 'MAX_PAYLOAD_EXCEEDED') {
      const bytes = parts.reduce((sum, part) => sum + part.byteLength, 0);
      throw new InvalidArgumentError(`the request is ${bytes} bytes, more than the ${nc.info?.max_payload ?? 'server'} bytes one message may hold`);
    }
    if (code === '503') throw new UnavailableError(`no process answers on ${subject}`);
    if (code === 'TIMEOUT' || code === 'timeout') throw new TimeoutError(`no reply on ${subject} within ${timeoutMs} ms`);
    throw error;
  }
  const decoded = decodeRequest(replyData) as { result: T; [BINARY_FIELD]?: Uint8Array };
  if (isErrorBody(decoded)) throw fromErrorBody(decoded);
  const bytes = decoded[BINARY_FIELD];
  if (bytes === undefined) return decoded.result;
  return { ...decoded.result, [BINARY_FIELD]: bytes } as T;
}

/**
 * Sends the request of `pieces` (sent back to back) sealed (see seal.ts) and resolves with the reply inside
 * its sealed reply. nats.js's errors reject as they are (the caller maps them); a reply whose seal does not
 * hold rejects with TimeoutError, as a lost reply: the request may or may not have been carried out.
 */
async function requestSealed(nc: NatsConnection, subject: string, pieces: readonly Uint8Array[], timeoutMs: number): Promise<Uint8Array> {
  const { message, crc } = sealRequest(pieces);
  const reply = await nc.request(subject, message, { timeout: timeoutMs });
  const opened = openReply(reply.data, crc);
  if ('damaged' in opened) throw new TimeoutError(`the reply on ${subject} was damaged in transit, so whether the request was carried out is unknown: ${opened.damaged}`);
  return opened.body;
}

/** Requests of one multi message in the making. */
interface PendingRequest {
  /** The request's bytes, as parts sent back to back. */
  parts: readonly Uint8Array[];
  bytes: number;
  apart: string | undefined;
  resolve: (reply: Uint8Array) => void;
  reject: (error: unknown) => void;
}

/** Requests of one process's connection to be coalesced (see `RequestOptions.coalesce`), sent at the end of the event loop turn. */
class RequestCoalescer {
  private readonly pending = new Map<string, { subject: string; timeoutMs: number; requests: PendingRequest[] }>();
  private scheduled = false;

  constructor(private readonly nc: NatsConnection) {}

  request(coalesce: { key: string; apart?: string }, subject: string, parts: readonly Uint8Array[], timeoutMs: number): Promise<Uint8Array> {
    return new Promise<Uint8Array>((resolve, reject) => {
      const groupKey = `${coalesce.key}\u0000${subject}\u0000${timeoutMs}`;
      let group = this.pending.get(groupKey);
      if (group === undefined) {
        group = { subject, timeoutMs, requests: [] };
        this.pending.set(groupKey, group);
      }
      group.requests.push({ parts, bytes: parts.reduce((sum, part) => sum + part.byteLength, 0), apart: coalesce.apart, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        // After every callback and promise job of this turn, so all the writes a call plans go together.
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const groups = [...this.pending.values()];
    this.pending.clear();
    const messageBytesMax = (this.nc.info?.max_payload ?? LIMITS.natsMaxPayloadBytes) - REQUEST_SEAL_BYTES;
    for (const { subject, timeoutMs, requests } of groups) {
      for (const indexes of groupForMultiMessages(
        requests.map((request) => request.bytes),
        messageBytesMax,
        LIMITS.multiRequestPartsMax,
        requests.map((request) => request.apart),
      )) {
        const members = indexes.map((index) => requests[index]!);
        if (members.length === 1) this.sendAlone(subject, timeoutMs, members[0]!);
        else this.sendTogether(subject, timeoutMs, members);
      }
    }
  }

  private sendAlone(subject: string, timeoutMs: number, request: PendingRequest): void {
    // requestSealed is async: anything nats.js throws at once (a closed connection, say) is its rejection.
    requestSealed(this.nc, subject, request.parts, timeoutMs).then(
      (reply) => request.resolve(reply),
      (error: unknown) => request.reject(error),
    );
  }

  private sendTogether(subject: string, timeoutMs: number, requests: PendingRequest[]): void {
    requestSealed(this.nc, subject, multiMessagePieces(requests.map((request) => request.parts)), timeoutMs).then(
      (reply) => {
        let answers: Uint8Array[] | null = null;
        try {
          if (isMultiMessage(reply)) answers = decodeMultiMessage(reply);
        } catch {
          // Broken framing: answered below as a reply that is not one answer per request.
        }
        if (answers !== null && answers.length === requests.length) {
          requests.forEach((request, index) => request.resolve(answers![index]!));
          return;
        }
        // Not one answer per request (a responder that refused the message as a whole): each gets the reply
        // as its own, so an error body reaches every caller.
        for (const request of requests) request.resolve(reply);
      },
      (error: unknown) => {
        // A server limit below the one this process knows of: each request goes alone, as it would have.
        if ((error as { code?: string }).code === 'MAX_PAYLOAD_EXCEEDED') {
          for (const request of requests) this.sendAlone(subject, timeoutMs, request);
          return;
        }
        for (const request of requests) request.reject(error);
      },
    );
  }
}

const coalescers = new WeakMap<NatsConnection, RequestCoalescer>();

function coalescerOf(nc: NatsConnection): RequestCoalescer {
  let coalescer = coalescers.get(nc);
  if (coalescer === undefined) {
    coalescer = new RequestCoalescer(nc);
    coalescers.set(nc, coalescer);
  }
  return coalescer;
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
 * multi message (several requests, see `RequestOptions.coalesce`) has each of its requests answered so, in
 * one multi reply; one whose framing is broken is answered InvalidArgument as a whole. A sealed request (see
 * seal.ts; every `requestJson` seals) is answered sealed, and one whose seal does not hold is not run: it is
 * answered Unavailable (its caller sends it again) and reported to `onError`. A message without a reply
 * subject is handled and not answered. Never rejects.
 */
export async function answerRequest(nc: NatsConnection, msg: Msg, handler: RpcHandler, onError?: (error: unknown) => void): Promise<void> {
  const opened = openRequest(msg.data);
  if ('damaged' in opened) onError?.(new Error(`a request on ${msg.subject} was damaged in transit and refused: ${opened.damaged}`));
  const encoded = await answerOpened(opened, nc.info?.max_payload, (data, maxPayload) => answerOf(data, msg, handler, maxPayload, onError));
  if (!msg.reply) return;
  try {
    msg.respond(encoded);
  } catch (error) {
    // The connection closed while the handler ran (the process is stopping): nobody can be answered.
    onError?.(error);
  }
}

/**
 * The reply to a received request message (`openRequest`'s reading of it): sealed when it was sealed, with
 * `answerOne`'s replies inside (see `answerMessage`); the Unavailable error body when its seal does not hold.
 */
async function answerOpened(
  opened: Opened,
  maxPayload: number | undefined,
  answerOne: (request: Uint8Array, maxPayload: number | undefined) => Promise<readonly Uint8Array[]>,
): Promise<Uint8Array> {
  if ('damaged' in opened) {
    const refusal = new UnavailableError(`the request was damaged in transit and not carried out (${opened.damaged}): send it again`);
    return sealReply([encodeJson(toErrorBody(refusal))], opened.crc);
  }
  if (!opened.sealed) return joinParts(await answerMessage(opened.body, (data) => answerOne(data, maxPayload), maxPayload));
  const room = maxPayload === undefined ? undefined : maxPayload - REPLY_SEAL_BYTES;
  return sealReply(await answerMessage(opened.body, (data) => answerOne(data, room), room), opened.crc);
}

/**
 * The reply to a request message, as pieces sent back to back: `answerOne`'s reply to it, or for a multi
 * message (see `RequestOptions.coalesce`) a multi reply of `answerOne`'s reply to each of its requests,
 * started in order, or an InvalidArgument error body when its framing is broken; a rejection of `answerOne`
 * rejects it (the one of `answerRequest` never rejects).
 */
async function answerMessage(data: Uint8Array, answerOne: (request: Uint8Array) => Promise<readonly Uint8Array[]>, maxPayload?: number): Promise<readonly Uint8Array[]> {
  if (!isMultiMessage(data)) return answerOne(data);
  let parts: Uint8Array[];
  try {
    parts = decodeMultiMessage(data);
  } catch (error) {
    return [encodeJson(toErrorBody(error))];
  }
  const pieces = multiMessagePieces(await Promise.all(parts.map((part) => answerOne(part))));
  const bytes = byteLengthOf(pieces);
  if (maxPayload === undefined || bytes <= maxPayload) return pieces;
  const tooLarge = encodeJson(toErrorBody(new MinkError('Internal', `the replies of ${parts.length} requests take ${bytes} bytes, more than the NATS max payload of ${maxPayload}`)));
  return multiMessagePieces(parts.map(() => tooLarge));
}

/**
 * A fake responder's `request` (of a fake NatsConnection in tests) made to answer as a mink endpoint does:
 * a sealed request is opened and answered sealed, and `request` answers each request of a multi message (see
 * `answerMessage`); a rejection of any rejects the whole message, as a missing responder or a timeout would.
 */
export function answeringMultiMessages<A extends unknown[]>(
  request: (subject: string, data: Uint8Array, ...rest: A) => Promise<{ data: Uint8Array }>,
): (subject: string, data: Uint8Array, ...rest: A) => Promise<{ data: Uint8Array }> {
  return async (subject, data, ...rest) => ({ data: await answerOpened(openRequest(data), undefined, async (part) => [(await request(subject, part, ...rest)).data]) });
}

/** The encoded reply to one request (`data`, JSON or JSON with binary bytes), as pieces sent back to back; never rejects. */
async function answerOf(data: Uint8Array, msg: Msg, handler: RpcHandler, maxPayload: number | undefined, onError?: (error: unknown) => void): Promise<readonly Uint8Array[]> {
  let reply: unknown;
  try {
    let body: unknown;
    try {
      body = decodeRequest(data);
    } catch (error) {
      throw error instanceof MinkError ? error : new InvalidArgumentError(`the request is not JSON: ${error instanceof Error ? error.message : String(error)}`);
    }
    const result = await handler(body, msg);
    reply = result instanceof WithBinary ? result : { result };
  } catch (error) {
    if (!(error instanceof MinkError)) onError?.(error);
    reply = toErrorBody(error);
  }
  const pieces = reply instanceof WithBinary ? withBinaryParts({ result: reply.result }, reply.bytes) : [encodeJson(reply)];
  // nats.js has no server info while the connection is down (a NATS server restarting, or a failover in a NATS
  // cluster): the reply is then sent as it is, and lost with the connection like any other message.
  const bytes = byteLengthOf(pieces);
  if (maxPayload !== undefined && bytes > maxPayload) {
    // An answer NATS cannot carry would leave the caller waiting for its timeout: say so instead.
    return [encodeJson(toErrorBody(new MinkError('Internal', `reply of ${bytes} bytes exceeds the NATS max payload of ${maxPayload}`)))];
  }
  return pieces;
}

function byteLengthOf(pieces: readonly Uint8Array[]): number {
  let total = 0;
  for (const piece of pieces) total += piece.byteLength;
  return total;
}

export { natsHeaders };
