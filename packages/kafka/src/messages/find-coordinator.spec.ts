/**
 * Proves the FindCoordinator codec reads what clients send and writes what they read, for every version
 * mink serves (0-2): against kafkajs's own request encoders and response decoders, and against byte
 * vectors written from the spec's field list.
 */
import { ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import {
  COORDINATOR_KEY_TYPES,
  decodeFindCoordinatorRequest,
  encodeFindCoordinatorResponse,
  type FindCoordinatorRequest,
  type FindCoordinatorResponse,
} from './find-coordinator';
import { bytesEncoder, kafkajsApi, kafkajsModule, prefixesNotRefused, wholeBodyDecoder } from './kafka-oracle.fixture';

const kafkajs = kafkajsApi('findCoordinator');
const decoded = wholeBodyDecoder(decodeFindCoordinatorRequest);
const encoded = bytesEncoder(encodeFindCoordinatorResponse);
const kafkajsCoordinatorTypes = kafkajsModule('protocol/coordinatorTypes');
const ALL_VERSIONS = [0, 1, 2];

/** The request as FindCoordinatorRequest.json lays it out, written field by field. */
function specRequestBytes(version: number, request: FindCoordinatorRequest): Uint8Array {
  const writer = new KafkaWriter().string(request.key);
  if (version >= 1) writer.int8(request.keyType);
  return writer.toBytes();
}

/** The response as FindCoordinatorResponse.json lays it out, written field by field; every field must be given. */
function specResponseBytes(version: number, response: Required<FindCoordinatorResponse>): Uint8Array {
  const writer = new KafkaWriter();
  if (version >= 1) writer.int32(response.throttleTimeMs);
  writer.int16(response.errorCode);
  if (version >= 1) writer.nullableString(response.errorMessage);
  return writer.int32(response.nodeId).string(response.host).int32(response.port).toBytes();
}

const RESPONSE: Required<FindCoordinatorResponse> = { throttleTimeMs: 5, errorCode: ERROR_CODES.NONE, errorMessage: null, nodeId: 2, host: 'node-2.mink', port: 9093 };
const FAILED: Required<FindCoordinatorResponse> = {
  throttleTimeMs: 0,
  errorCode: ERROR_CODES.COORDINATOR_NOT_AVAILABLE,
  errorMessage: 'The coordinator is not available.',
  nodeId: -1,
  host: '',
  port: -1,
};

describe('decodeFindCoordinatorRequest', () => {
  it('uses the key types kafkajs uses', () => {
    expect(COORDINATOR_KEY_TYPES).toEqual({ group: kafkajsCoordinatorTypes.GROUP, transaction: kafkajsCoordinatorTypes.TRANSACTION });
  });

  it('reads the group id kafkajs sends in version 0 as a group key', async () => {
    const body: Uint8Array = await kafkajs.requestBytes(0, { groupId: 'billing' });
    expect(decoded(body, 0)).toEqual({ key: 'billing', keyType: COORDINATOR_KEY_TYPES.group });
  });

  it.each([1, 2].flatMap((version) => [COORDINATOR_KEY_TYPES.group, COORDINATOR_KEY_TYPES.transaction].map((keyType) => ({ version, keyType }))))(
    'reads the key and key type $keyType kafkajs sends in version $version',
    async ({ version, keyType }) => {
      const body: Uint8Array = await kafkajs.requestBytes(version, { coordinatorKey: 'payments-tx', coordinatorType: keyType });
      expect(decoded(body, version)).toEqual({ key: 'payments-tx', keyType });
    },
  );

  it.each(ALL_VERSIONS)('reads version %i from bytes built from the spec', (version) => {
    const request = { key: 'billing', keyType: version >= 1 ? COORDINATOR_KEY_TYPES.transaction : COORDINATOR_KEY_TYPES.group };
    expect(decoded(specRequestBytes(version, request), version)).toEqual(request);
  });

  it.each(ALL_VERSIONS)('refuses every truncation of a version %i request with KafkaDecodeError', (version) => {
    const bytes = specRequestBytes(version, { key: 'billing', keyType: 1 });
    expect(prefixesNotRefused(bytes, (reader) => decodeFindCoordinatorRequest(reader, version))).toEqual([]);
  });

  it('refuses a key that is not UTF-8 with KafkaDecodeError', () => {
    const bytes = new KafkaWriter().int16(2).raw(Uint8Array.of(0xc3, 0x28)).toBytes();
    expect(() => decodeFindCoordinatorRequest(new KafkaReader(bytes), 0)).toThrow(KafkaDecodeError);
  });

  it.each([-1, 3])('refuses version %i, which it does not serve, with KafkaDecodeError', (version) => {
    expect(() => decodeFindCoordinatorRequest(new KafkaReader(specRequestBytes(2, { key: 'g', keyType: 0 })), version)).toThrow(KafkaDecodeError);
  });
});

describe('encodeFindCoordinatorResponse', () => {
  it.each(ALL_VERSIONS.flatMap((version) => [RESPONSE, FAILED].map((response) => ({ version, response }))))(
    'writes version $version with error $response.errorCode exactly as the spec lays it out',
    ({ version, response }) => {
      expect(encoded(version, response)).toEqual(specResponseBytes(version, response));
    },
  );

  it.each(ALL_VERSIONS)('writes version %i so that kafkajs reads every field', async (version) => {
    const response = kafkajs.response(version);
    const decodedByKafkajs = await response.decode(encoded(version, RESPONSE));
    expect(decodedByKafkajs).toEqual({
      ...(version === 1 ? { throttleTime: 5 } : {}),
      ...(version === 2 ? { throttleTime: 0, clientSideThrottleTime: 5 } : {}),
      errorCode: 0,
      ...(version >= 1 ? { errorMessage: null } : {}),
      coordinator: { nodeId: 2, host: 'node-2.mink', port: 9093 },
    });
    await expect(response.parse(decodedByKafkajs)).resolves.toBe(decodedByKafkajs);
  });

  it.each(ALL_VERSIONS)('writes an error in version %i that kafkajs reports, with its message from version 1', async (version) => {
    const response = kafkajs.response(version);
    const decodedByKafkajs = await response.decode(encoded(version, FAILED));
    expect(decodedByKafkajs.errorMessage).toBe(version >= 1 ? FAILED.errorMessage : undefined);
    await expect(response.parse(decodedByKafkajs)).rejects.toMatchObject({ type: 'GROUP_COORDINATOR_NOT_AVAILABLE' }); // kafkajs's name for code 15
  });

  it.each(ALL_VERSIONS)('writes the spec defaults in version %i for fields left out', (version) => {
    const minimal = { errorCode: 0, nodeId: 1, host: 'h', port: 2 };
    expect(encoded(version, minimal)).toEqual(specResponseBytes(version, { ...minimal, throttleTimeMs: 0, errorMessage: null }));
  });

  it.each([-1, 3])('refuses to write version %i', (version) => {
    expect(() => encoded(version, RESPONSE)).toThrow(/outside the served versions/);
  });
});
