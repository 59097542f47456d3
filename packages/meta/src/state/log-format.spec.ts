import { KAFKA_TOPIC_COLUMNS, LOG_FORMAT_PROPERTY, checkLogFormat, kafkaTopicSpec, logFormatOf } from './log-format';
import { validateTableSpec } from './schema';
import type { TableSpec } from './view';

const TOPIC = kafkaTopicSpec('orders', 3);

describe('logFormatOf', () => {
  it.each([
    [{}, 'arrow'],
    [{ properties: {} }, 'arrow'],
    [{ properties: { [LOG_FORMAT_PROPERTY]: 'arrow' } }, 'arrow'],
    [{ properties: { [LOG_FORMAT_PROPERTY]: 'kafka' } }, 'kafka'],
  ])('%j is %s', (table, format) => {
    expect(logFormatOf(table)).toBe(format);
  });
});

describe('checkLogFormat', () => {
  it.each<[string, TableSpec, RegExp | null]>([
    ['a topic spec', TOPIC, null],
    ['no property', { name: 't', columns: [{ name: 'a', type: 'int64' }], buckets: 1 }, null],
    ['arrow on any log table', { name: 't', columns: [{ name: 'a', type: 'int64' }], buckets: 1, properties: { [LOG_FORMAT_PROPERTY]: 'arrow' } }, null],
    ['an unknown format', { ...TOPIC, properties: { [LOG_FORMAT_PROPERTY]: 'parquet' } }, /must be one of arrow, kafka, got 'parquet'/],
    ['kafka with a primary key', { ...TOPIC, primaryKey: ['key'] }, /no primary key/],
    ['kafka partitioned', { ...TOPIC, partition: { column: 'key', unit: 'day', retain: 1 } }, /not partitioned/],
    ['kafka with other columns', { ...TOPIC, columns: [{ name: 'key', type: 'bytes' }, { name: 'value', type: 'string' }, { name: 'headers', type: 'string' }] }, /has the columns key bytes, value bytes, headers string, not key bytes, value string/],
  ])('%s', (_case, spec, expected) => {
    const message = checkLogFormat(spec);
    if (expected === null) expect(message).toBeNull();
    else expect(message).toMatch(expected);
  });

  it('is part of the table spec validation, so a create through any door is refused', () => {
    const result = validateTableSpec({ ...TOPIC, properties: { [LOG_FORMAT_PROPERTY]: 'kafka' }, columns: [{ name: 'x', type: 'int64' }] });
    expect(result).toEqual({ ok: false, message: expect.stringMatching(/kafka format has the columns/) });
    expect(validateTableSpec(TOPIC)).toEqual({ ok: true, spec: TOPIC });
  });
});

describe('kafkaTopicSpec', () => {
  it('declares the topic columns and format, keeping other properties', () => {
    expect(kafkaTopicSpec('t', 2, { 'table.log.ttl': '1d' })).toEqual({
      name: 't',
      columns: [...KAFKA_TOPIC_COLUMNS],
      buckets: 2,
      properties: { 'table.log.ttl': '1d', [LOG_FORMAT_PROPERTY]: 'kafka' },
    });
  });
});
