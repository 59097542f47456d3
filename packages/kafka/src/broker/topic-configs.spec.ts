import { changesOfAlterConfigs, changesOfIncrementalAlterConfigs, tablePropertiesOfTopicConfigs, tablePropertyChangesOfTopicConfigs, topicConfigsOfTableProperties } from './topic-configs';

describe('tablePropertiesOfTopicConfigs (CreateTopics)', () => {
  it.each<[string, Record<string, string>, ReturnType<typeof tablePropertiesOfTopicConfigs>]>([
    ['no configs: no properties (the defaults)', {}, { properties: {} }],
    ['retention.ms becomes table.log.ttl in milliseconds', { 'retention.ms': '60000' }, { properties: { 'table.log.ttl': '60000' } }],
    ['retention.ms -1 keeps for ever (a ttl of 0)', { 'retention.ms': '-1' }, { properties: { 'table.log.ttl': '0' } }],
    ['what mink does anyway is taken and not stored', { 'cleanup.policy': 'delete', 'compression.type': 'producer', 'message.timestamp.type': 'CreateTime' }, { properties: {} }],
    ['retention.ms 0', { 'retention.ms': '0' }, { refused: "retention.ms must be -1 or a positive number of milliseconds, got '0'" }],
    ['retention.ms not a number', { 'retention.ms': '7d' }, { refused: "retention.ms must be -1 or a positive number of milliseconds, got '7d'" }],
    ['compaction', { 'cleanup.policy': 'compact' }, { refused: "config 'cleanup.policy' can only be 'delete' in mink, got 'compact'" }],
    [
      'a config mink does not take, by name',
      { 'segment.bytes': '1024' },
      { refused: "config 'segment.bytes' is not supported (mink takes retention.ms, and cleanup.policy=delete, compression.type=producer, message.timestamp.type=CreateTime as they are)" },
    ],
    ['a name like a prototype member', { constructor: 'x' }, { refused: expect.stringContaining("config 'constructor' is not supported") as unknown as string }],
  ])('%s', (_case, configs, expected) => {
    // Proves a client is never told a config took effect that mink does not honour.
    expect(tablePropertiesOfTopicConfigs(configs)).toEqual(expected);
  });
});

describe('tablePropertyChangesOfTopicConfigs (AlterConfigs, IncrementalAlterConfigs)', () => {
  it.each<[string, { name: string; value: string | null }[], ReturnType<typeof tablePropertyChangesOfTopicConfigs>]>([
    ['set retention', [{ name: 'retention.ms', value: '3600000' }], { properties: { 'table.log.ttl': '3600000' } }],
    ['back to the default retention', [{ name: 'retention.ms', value: null }], { properties: { 'table.log.ttl': null } }],
    ['delete a fixed config: nothing to change', [{ name: 'cleanup.policy', value: null }], { properties: {} }],
    ['another config', [{ name: 'max.message.bytes', value: '10' }], { refused: expect.stringContaining("config 'max.message.bytes' is not supported") as unknown as string }],
    ['one of the table\'s own properties at its current value: taken, nothing changes', [{ name: 'table.log.format', value: 'kafka' }], { properties: {} }],
    ['one of the table\'s own properties changed', [{ name: 'table.log.format', value: 'arrow' }], { refused: expect.stringContaining("config 'table.log.format' is not supported") as unknown as string }],
    ['table.log.ttl by its own name', [{ name: 'table.log.ttl', value: '2h' }], { refused: expect.stringContaining("config 'table.log.ttl' is not supported") as unknown as string }],
  ])('%s', (_case, changes, expected) => {
    expect(tablePropertyChangesOfTopicConfigs(changes, { 'table.log.format': 'kafka', 'table.log.ttl': '2h' })).toEqual(expected);
  });
});

describe('changesOfAlterConfigs (AlterConfigs replaces the set)', () => {
  it.each<[string, { name: string; value: string | null }[], ReturnType<typeof changesOfAlterConfigs>]>([
    ['retention.ms named: set', [{ name: 'retention.ms', value: '1000' }], [{ name: 'retention.ms', value: '1000' }]],
    ['retention.ms not named: back to its default', [{ name: 'cleanup.policy', value: 'delete' }], [{ name: 'cleanup.policy', value: 'delete' }, { name: 'retention.ms', value: null }]],
    ['retention.ms without a value: skipped, so back to its default', [{ name: 'retention.ms', value: null }], [{ name: 'retention.ms', value: null }]],
    ['nothing named: every config back to its default', [], [{ name: 'retention.ms', value: null }]],
    ['a name twice', [{ name: 'retention.ms', value: '1' }, { name: 'retention.ms', value: '2' }], { refused: "config 'retention.ms' is named twice", invalidRequest: true }],
  ])('%s', (_case, configs, expected) => {
    expect(changesOfAlterConfigs(configs)).toEqual(expected);
  });
});

describe('changesOfIncrementalAlterConfigs', () => {
  it.each<[string, { name: string; configOperation: number; value: string | null }[], ReturnType<typeof changesOfIncrementalAlterConfigs>]>([
    ['SET', [{ name: 'retention.ms', configOperation: 0, value: '1000' }], [{ name: 'retention.ms', value: '1000' }]],
    ['DELETE: back to the default', [{ name: 'retention.ms', configOperation: 1, value: null }], [{ name: 'retention.ms', value: null }]],
    ['configs not named are left as they are', [], []],
    ['APPEND to a config that is not a list', [{ name: 'cleanup.policy', configOperation: 2, value: 'delete' }], { refused: "config 'cleanup.policy' is not a list: APPEND does not apply to it" }],
    ['SUBTRACT', [{ name: 'cleanup.policy', configOperation: 3, value: 'delete' }], { refused: "config 'cleanup.policy' is not a list: SUBTRACT does not apply to it" }],
    ['a SET without a value', [{ name: 'retention.ms', configOperation: 0, value: null }], { refused: "a SET of config 'retention.ms' needs a value", invalidRequest: true }],
    ['an unknown operation', [{ name: 'retention.ms', configOperation: 7, value: '1' }], { refused: "config operation 7 of 'retention.ms' is unknown (0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT)", invalidRequest: true }],
    ['a name twice', [{ name: 'retention.ms', configOperation: 0, value: '1' }, { name: 'retention.ms', configOperation: 1, value: null }], { refused: "config 'retention.ms' is named twice", invalidRequest: true }],
  ])('%s', (_case, configs, expected) => {
    expect(changesOfIncrementalAlterConfigs(configs)).toEqual(expected);
  });
});

describe('topicConfigsOfTableProperties (DescribeConfigs)', () => {
  it.each<[string, Record<string, string>, Record<string, { value: string; isDefault: boolean }>]>([
    [
      'a table without properties: the defaults',
      {},
      {
        'retention.ms': { value: '604800000', isDefault: true },
        'cleanup.policy': { value: 'delete', isDefault: true },
        'compression.type': { value: 'producer', isDefault: true },
        'message.timestamp.type': { value: 'CreateTime', isDefault: true },
      },
    ],
    [
      'a ttl in any unit the table takes, for ever, and mink\'s own properties',
      { 'table.log.ttl': '2h', 'table.log.format': 'kafka' },
      {
        'retention.ms': { value: '7200000', isDefault: false },
        'cleanup.policy': { value: 'delete', isDefault: true },
        'compression.type': { value: 'producer', isDefault: true },
        'message.timestamp.type': { value: 'CreateTime', isDefault: true },
        'table.log.format': { value: 'kafka', isDefault: false },
      },
    ],
  ])('%s', (_case, properties, expected) => {
    expect(topicConfigsOfTableProperties(properties)).toEqual(expected);
  });

  it('reads a ttl of 0 as retention.ms -1', () => {
    expect(topicConfigsOfTableProperties({ 'table.log.ttl': '0' })['retention.ms']).toEqual({ value: '-1', isDefault: false });
  });
});
