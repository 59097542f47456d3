/**
 * What the codec specs of this folder share (a fixture, not part of the package's build): kafkajs's own
 * protocol code as the oracle, the codecs under test turned into functions of bytes, and the check that
 * every truncation of a message is refused.
 *
 * kafkajs has no exports map and no types for its protocol internals, so they are reached here by path
 * under kafkajs/src and used untyped (`any`), as they are.
 */
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';

/** The module at `path` under kafkajs/src, e.g. `protocol/configSource`. */
export function kafkajsModule(path: string): any {
  return require(`kafkajs/src/${path}`);
}

/** kafkajs's primitive writer: an implementation independent of ours, for vectors built field by field from a spec. */
export const KafkajsEncoder = kafkajsModule('protocol/encoder');
/** kafkajs's primitive reader, for reading what we write field by field as a spec lays it out. */
export const KafkajsDecoder = kafkajsModule('protocol/decoder');
/** kafkajs's int64, which its encoders take for producer ids and offsets. */
export const KafkajsLong = kafkajsModule('utils/long');
/** kafkajs's compression codecs by name (`None`, `GZIP`, ...). */
export const KafkajsCompression = kafkajsModule('protocol/message/compression').Types;
/** kafkajs's consumer protocol, both v0: MemberMetadata is the subscription, MemberAssignment the assignment. */
export const { MemberMetadata: KafkajsMemberMetadata, MemberAssignment: KafkajsMemberAssignment } = kafkajsModule('consumer/assignerProtocol');

/** kafkajs's client side of one API (its directory under protocol/requests, e.g. `createTopics`), by version. */
export interface KafkajsApi {
  /** The request factory: called with kafkajs's fields it gives a request, whose `encode()` resolves to an Encoder. */
  request(version: number): any;
  /** The response decoder: `decode` reads the body (from any Uint8Array), `parse` rejects with the error a code maps to. */
  response(version: number): { decode(bytes: Uint8Array): Promise<any>; parse(decoded: any): Promise<any> };
  /** The request body kafkajs writes for `fields`, without the size prefix and header. */
  requestBytes(version: number, fields?: object): Promise<Buffer>;
}

/** kafkajs's client side of `api`; its response decoder is handed a Buffer copy, as kafkajs reads only Buffers. */
export function kafkajsApi(api: string): KafkajsApi {
  const part = (version: number, name: 'request' | 'response'): any => kafkajsModule(`protocol/requests/${api}/v${version}/${name}`);
  return {
    request: (version) => part(version, 'request'),
    response: (version) => {
      const { decode, parse } = part(version, 'response');
      return { decode: (bytes) => decode(Buffer.from(bytes)), parse };
    },
    requestBytes: async (version, fields) => (await part(version, 'request')(fields).encode()).buffer,
  };
}

/** One message as kafkajs's Record encoder takes it; a header with an array value is that header repeated. */
export interface KafkajsMessage {
  key: Buffer | null;
  value: Buffer | null;
  timestamp: number;
  headers?: Record<string, Buffer | string | Buffer[]>;
}

/** A batch's messages and header fields; a field left out is kafkajs's default (no compression, offset 0, no producer id). */
export interface KafkajsBatchOptions {
  messages: KafkajsMessage[];
  compression?: number;
  firstOffset?: number;
  /** The timestamp the record deltas count from; the first message's unless given. */
  firstTimestamp?: number;
  partitionLeaderEpoch?: number;
  transactional?: boolean;
  producerId?: number;
  producerEpoch?: number;
  firstSequence?: number;
}

const kafkajsBatch = kafkajsModule('protocol/recordBatch/v0').RecordBatch;
const kafkajsRecord = kafkajsModule('protocol/recordBatch/record/v0');

/** A record batch written by kafkajs's own RecordBatch and Record encoders, as a copy its caller may change. */
export async function kafkajsRecordBatch(options: KafkajsBatchOptions): Promise<Uint8Array> {
  const { messages } = options;
  const firstTimestamp = options.firstTimestamp ?? messages[0]!.timestamp;
  const maxTimestamp = Math.max(...messages.map((message) => message.timestamp));
  const records = messages.map((message, index) =>
    kafkajsRecord({ key: message.key, value: message.value, headers: message.headers, offsetDelta: index, timestampDelta: message.timestamp - firstTimestamp }),
  );
  const encoder = await kafkajsBatch({
    compression: options.compression ?? KafkajsCompression.None,
    firstOffset: KafkajsLong.fromValue(options.firstOffset ?? 0),
    firstTimestamp,
    maxTimestamp,
    partitionLeaderEpoch: options.partitionLeaderEpoch ?? 0,
    lastOffsetDelta: records.length - 1,
    transactional: options.transactional ?? false,
    producerId: KafkajsLong.fromValue(options.producerId ?? -1),
    producerEpoch: options.producerEpoch ?? 0,
    firstSequence: options.firstSequence ?? 0,
    records,
  });
  return new Uint8Array(encoder.buffer);
}

/**
 * `decode` as a function of a whole body: it expects the decoder to read every byte, and gives back what
 * it read, so that a field read too few or too many times fails the test that decodes.
 */
export function wholeBodyDecoder<Message>(decode: (reader: KafkaReader, version: number) => Message): (bytes: Uint8Array, version: number) => Message {
  return (bytes, version) => {
    const reader = new KafkaReader(bytes);
    const message = decode(reader, version);
    expect(reader.remaining).toBe(0);
    return message;
  };
}

/** `encode` as a function that gives the bytes it wrote. */
export function bytesEncoder<Message>(encode: (writer: KafkaWriter, version: number, message: Message) => void): (version: number, message: Message) => Uint8Array {
  return (version, message) => {
    const writer = new KafkaWriter();
    encode(writer, version, message);
    return writer.toBytes();
  };
}

/**
 * The proper prefixes of `bytes` (the empty one included) that `decode` did not refuse with a
 * KafkaDecodeError, each with what happened instead; a decoder that refuses every truncation gives [].
 * `decode` gets the prefix both in a reader and as bytes.
 */
export function prefixesNotRefused(bytes: Uint8Array, decode: (reader: KafkaReader, prefix: Uint8Array) => unknown): Array<{ length: number; outcome: string }> {
  const failures: Array<{ length: number; outcome: string }> = [];
  for (let length = 0; length < bytes.byteLength; length++) {
    const prefix = bytes.subarray(0, length);
    try {
      decode(new KafkaReader(prefix), prefix);
      failures.push({ length, outcome: 'decoded' });
    } catch (error) {
      if (!(error instanceof KafkaDecodeError)) failures.push({ length, outcome: String(error) });
    }
  }
  return failures;
}
