import { ERROR_CODES } from '../wire/codes';
import { KafkaDecodeError, KafkaReader } from '../wire/reader';
import { KafkaWriter } from '../wire/writer';
import { decodeListGroupsRequest, encodeListGroupsResponse, LIST_GROUPS_VERSIONS, type ListGroupsResponse } from './list-groups';
import { bytesEncoder, kafkajsApi } from './kafka-oracle.fixture';

// kafkajs is the oracle: it implements every version handled here (v0–2), request and response.
const kafkajs = kafkajsApi('listGroups');
const encoded = bytesEncoder(encodeListGroupsResponse);

const response: ListGroupsResponse = {
  throttleTimeMs: 8,
  errorCode: ERROR_CODES.NONE,
  groups: [
    { groupId: 'orders-consumers', protocolType: 'consumer' },
    { groupId: 'offsets-only', protocolType: '' },
  ],
};

describe('decodeListGroupsRequest', () => {
  // Each row proves that kafkajs's (empty) request decodes and that nothing is consumed.
  it.each([0, 1, 2])('v%i against kafkajs', async (version) => {
    const bytes = await kafkajs.requestBytes(version);
    expect(bytes.length).toBe(0);
    const reader = new KafkaReader(bytes);
    expect(decodeListGroupsRequest(reader, version)).toEqual({});
    expect(reader.offset).toBe(0);
  });

  it.each([-1, LIST_GROUPS_VERSIONS.max + 1])('refuses version %i', (version) => {
    expect(() => decodeListGroupsRequest(new KafkaReader(new Uint8Array(0)), version)).toThrow(KafkaDecodeError);
  });
});

describe('encodeListGroupsResponse against kafkajs', () => {
  // Each row proves that kafkajs reads back the groups, the error code and, from v1, the throttle time.
  it.each<{ version: number; throttle: object }>([
    { version: 0, throttle: {} },
    { version: 1, throttle: { throttleTime: 8 } },
    { version: 2, throttle: { throttleTime: 0, clientSideThrottleTime: 8 } },
  ])('v$version', async ({ version, throttle }) => {
    const { decode, parse } = kafkajs.response(version);
    expect(await parse(await decode(encoded(version, response)))).toEqual({ ...throttle, errorCode: 0, groups: response.groups });
  });

  it('an error reaches kafkajs as that error', async () => {
    const { decode, parse } = kafkajs.response(2);
    const bytes = encoded(2, { throttleTimeMs: 0, errorCode: ERROR_CODES.COORDINATOR_NOT_AVAILABLE, groups: [] });
    await expect(parse(await decode(bytes))).rejects.toMatchObject({ code: ERROR_CODES.COORDINATOR_NOT_AVAILABLE });
  });

  it('refuses a version outside the range', () => {
    expect(() => encodeListGroupsResponse(new KafkaWriter(), 3, response)).toThrow();
  });
});
