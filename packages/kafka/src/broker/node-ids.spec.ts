import { hostAndPortOf, kafkaNodeIdOf } from './node-ids';

describe('kafkaNodeIdOf', () => {
  it.each([
    ['1', 1],
    ['0', 0],
    ['42', 42],
    ['999999999', 999_999_999],
  ])('a decimal node id %s is its own broker id', (nodeId, expected) => {
    expect(kafkaNodeIdOf(nodeId)).toBe(expected);
  });

  it.each(['node-a', 'node-b', '01', '1000000000', 'データ'])('any other name %s gets a stable id above the decimal range and within int32', (nodeId) => {
    const id = kafkaNodeIdOf(nodeId);
    expect(id).toBe(kafkaNodeIdOf(nodeId));
    expect(id).toBeGreaterThanOrEqual(1_000_000_000);
    expect(id).toBeLessThanOrEqual(2_147_483_647);
  });

  it('gives different names different ids', () => {
    const ids = new Set(Array.from({ length: 1000 }, (_, index) => kafkaNodeIdOf(`node-${index}`)));
    expect(ids.size).toBe(1000);
  });
});

describe('hostAndPortOf', () => {
  it.each([
    ['127.0.0.1:9092', { host: '127.0.0.1', port: 9092 }],
    ['broker.example:19092', { host: 'broker.example', port: 19092 }],
    ['[::1]:9092', { host: '::1', port: 9092 }],
    ['host', null],
    ['host:0', null],
    ['host:99999', null],
    [':9092', null],
  ])('%s', (address, expected) => {
    expect(hostAndPortOf(address)).toEqual(expected);
  });
});
