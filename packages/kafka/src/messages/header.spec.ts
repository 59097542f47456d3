/**
 * Proves the header rules: which header version each API version uses (against a copy of the specs'
 * flexible versions), that a request header kafkajs frames decodes and leaves the reader at the body,
 * that header v2's tagged fields are skipped, and that every truncated header is refused.
 */
import { API_KEYS, type ApiName } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import {
  decodeRequestHeader,
  encodeResponseHeader,
  requestHeaderVersion,
  requireRequestVersion,
  requireResponseVersion,
  responseHeaderVersion,
} from './header';
import { kafkajsApi, kafkajsModule, prefixesNotRefused } from './kafka-oracle.fixture';
import { decodeMetadataRequest } from './metadata';

const kafkajsFrame = kafkajsModule('protocol/request');
const kafkajsMetadataV4Request = kafkajsApi('metadata').request(4);

/** The first flexible version of each API, copied from the `flexibleVersions` of Kafka's message specs. */
const FIRST_FLEXIBLE: ReadonlyArray<[ApiName, number]> = [
  ['Produce', 9],
  ['Fetch', 12],
  ['ListOffsets', 6],
  ['Metadata', 9],
  ['OffsetCommit', 8],
  ['OffsetFetch', 6],
  ['FindCoordinator', 3],
  ['JoinGroup', 6],
  ['Heartbeat', 4],
  ['LeaveGroup', 4],
  ['SyncGroup', 4],
  ['DescribeGroups', 5],
  ['ListGroups', 3],
  ['ApiVersions', 3],
  ['CreateTopics', 5],
  ['DeleteTopics', 4],
  ['DeleteRecords', 2],
  ['InitProducerId', 2],
  ['OffsetForLeaderEpoch', 4],
  ['AddPartitionsToTxn', 3],
  ['AddOffsetsToTxn', 3],
  ['EndTxn', 3],
  ['TxnOffsetCommit', 3],
  ['DescribeConfigs', 4],
  ['AlterConfigs', 2],
  ['IncrementalAlterConfigs', 1],
  ['SaslAuthenticate', 2],
  // "flexibleVersions": "none".
  ['SaslHandshake', Number.POSITIVE_INFINITY],
];

describe('header versions', () => {
  it('covers every API key mink knows, so the header rule cannot silently treat one as not flexible', () => {
    expect(FIRST_FLEXIBLE.map(([name]) => name).sort()).toEqual(Object.keys(API_KEYS).sort());
  });

  it('SaslHandshake is never flexible: header v1 and response header v0 at every version', () => {
    expect([0, 1, 2, 100].map((version) => [requestHeaderVersion(API_KEYS.SaslHandshake, version), responseHeaderVersion(API_KEYS.SaslHandshake, version)])).toEqual([
      [1, 0],
      [1, 0],
      [1, 0],
      [1, 0],
    ]);
  });

  it.each(FIRST_FLEXIBLE.filter(([, first]) => Number.isFinite(first)))('%s: request header v1 below version %i, v2 from it; response header v0 then v1 (ApiVersions always v0)', (name, firstFlexible) => {
    const apiKey = API_KEYS[name];
    expect(requestHeaderVersion(apiKey, 0)).toBe(1);
    expect(requestHeaderVersion(apiKey, firstFlexible - 1)).toBe(1);
    expect(requestHeaderVersion(apiKey, firstFlexible)).toBe(2);
    expect(requestHeaderVersion(apiKey, firstFlexible + 1)).toBe(2);
    expect(responseHeaderVersion(apiKey, firstFlexible - 1)).toBe(0);
    expect(responseHeaderVersion(apiKey, firstFlexible)).toBe(name === 'ApiVersions' ? 0 : 1);
  });

  it('treats an API key it does not know as not flexible', () => {
    expect(requestHeaderVersion(999, 50)).toBe(1);
    expect(responseHeaderVersion(999, 50)).toBe(0);
  });
});

describe('decodeRequestHeader', () => {
  it('reads the header kafkajs frames a request with and leaves the reader at the body', async () => {
    const request = kafkajsMetadataV4Request({ topics: ['orders', 'payments'], allowAutoTopicCreation: false });
    const frame: Buffer = (await kafkajsFrame({ correlationId: 4242, clientId: 'mink-test', request })).buffer;
    const reader = new KafkaReader(frame, 4); // past the size prefix
    expect(new DataView(frame.buffer, frame.byteOffset).getInt32(0)).toBe(frame.byteLength - 4);

    const header = decodeRequestHeader(reader);

    expect(header).toEqual({ apiKey: API_KEYS.Metadata, apiVersion: 4, correlationId: 4242, clientId: 'mink-test', headerVersion: 1 });
    expect(decodeMetadataRequest(reader, header.apiVersion).topics).toEqual(['orders', 'payments']);
    expect(reader.remaining).toBe(0);
  });

  it('reads a null client id', async () => {
    const request = kafkajsMetadataV4Request({ topics: ['orders'] });
    const frame: Buffer = (await kafkajsFrame({ correlationId: -7, clientId: null, request })).buffer;
    expect(decodeRequestHeader(new KafkaReader(frame, 4))).toEqual({
      apiKey: API_KEYS.Metadata,
      apiVersion: 4,
      correlationId: -7,
      clientId: null,
      headerVersion: 1,
    });
  });

  it('reads header v2 of a flexible version: an int16-length client id, then tagged fields it skips', () => {
    const bytes = new KafkaWriter()
      .int16(API_KEYS.ApiVersions)
      .int16(3)
      .int32(99)
      .string('rdkafka')
      .uvarint(1) // one tagged field
      .uvarint(7) // its tag
      .uvarint(2) // its size
      .raw(Uint8Array.of(0xab, 0xcd))
      .int8(0x5a) // first byte of the body
      .toBytes();
    const reader = new KafkaReader(bytes);

    expect(decodeRequestHeader(reader)).toEqual({ apiKey: API_KEYS.ApiVersions, apiVersion: 3, correlationId: 99, clientId: 'rdkafka', headerVersion: 2 });
    expect(reader.int8()).toBe(0x5a);
  });

  it('reads header v2 of an ApiVersions version mink does not serve (the client cannot know yet)', () => {
    const bytes = new KafkaWriter().int16(API_KEYS.ApiVersions).int16(4).int32(1).string('java').taggedFields().toBytes();
    const reader = new KafkaReader(bytes);
    expect(decodeRequestHeader(reader).headerVersion).toBe(2);
    expect(reader.remaining).toBe(0);
  });

  it.each([
    ['header v1', new KafkaWriter().int16(API_KEYS.Metadata).int16(1).int32(5).string('client').toBytes()],
    ['header v2', new KafkaWriter().int16(API_KEYS.Metadata).int16(9).int32(5).string('client').uvarint(1).uvarint(0).uvarint(3).raw(Uint8Array.of(1, 2, 3)).toBytes()],
  ])('refuses every truncation of a %s with KafkaDecodeError', (_name, bytes) => {
    expect(decodeRequestHeader(new KafkaReader(bytes)).correlationId).toBe(5);
    expect(prefixesNotRefused(bytes, decodeRequestHeader)).toEqual([]);
  });
});

describe('encodeResponseHeader', () => {
  it.each<[0 | 1, number[]]>([
    [0, [0x00, 0x01, 0x02, 0x03]],
    [1, [0x00, 0x01, 0x02, 0x03, 0x00]],
  ])('writes response header v%i', (headerVersion, bytes) => {
    const writer = new KafkaWriter();
    encodeResponseHeader(writer, 0x010203, headerVersion);
    expect([...writer.toBytes()]).toEqual(bytes);
  });
});

describe('version ranges', () => {
  const range = { min: 1, max: 3 };

  it.each([0, 4, -1, 1.5])('refuses to decode version %p outside 1-3 with KafkaDecodeError', (version) => {
    expect(() => requireRequestVersion('Metadata', range, version)).toThrow(KafkaDecodeError);
    expect(() => requireResponseVersion('Metadata', range, version)).toThrow(/outside the served versions 1-3/);
  });

  it.each([1, 2, 3])('accepts version %i', (version) => {
    expect(() => requireRequestVersion('Metadata', range, version)).not.toThrow();
    expect(() => requireResponseVersion('Metadata', range, version)).not.toThrow();
  });
});
