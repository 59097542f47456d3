import { parseAccessPolicy } from '@mink/protocol';
import { kafkaAllows, type KafkaAccessOperation, type KafkaResource } from './kafka-access';

const policy = parseAccessPolicy(
  JSON.stringify({
    tokens: [
      { name: 'ops', token: 'ops-0123456789abcdef', scopes: ['admin'] },
      { name: 'reader', token: 'reader-0123456789ab', scopes: ['read'] },
      { name: 'writer', token: 'writer-0123456789ab', scopes: ['write'] },
      { name: 'clicks-rw', token: 'clicks-0123456789ab', scopes: ['read', 'write'], tables: ['clicks'] },
      { name: 'clicks-admin', token: 'clicksadmin-0123456789', scopes: ['admin'], tables: ['clicks'] },
    ],
  }),
  'tokens.json',
);
const token = (name: string) => policy.tokens.find((each) => each.name === name)!;

describe('kafkaAllows', () => {
  // Each row: who, what, on which resource, and whether it is allowed.
  it.each<[string, KafkaAccessOperation, KafkaResource, boolean]>([
    ['ops', 'admin', 'cluster', true],
    ['ops', 'write', { topic: 'clicks' }, true],
    ['ops', 'read', { group: 'g' }, true],
    ['reader', 'read', { topic: 'clicks' }, true],
    ['reader', 'describe', { topic: 'clicks' }, true],
    ['reader', 'write', { topic: 'clicks' }, false],
    ['reader', 'write', { transactionalId: 't' }, false],
    ['reader', 'write', 'cluster', false],
    ['reader', 'admin', { topic: 'clicks' }, false],
    ['reader', 'read', { group: 'g' }, true],
    ['writer', 'write', { topic: 'clicks' }, true],
    ['writer', 'write', 'cluster', true],
    ['writer', 'write', { transactionalId: 't' }, true],
    ['writer', 'write', 'producerIds', true],
    ['reader', 'write', 'producerIds', false],
    ['clicks-rw', 'write', 'producerIds', true],
    ['writer', 'read', { topic: 'clicks' }, false],
    ['writer', 'read', { group: 'g' }, false],
    ['writer', 'describe', { topic: 'clicks' }, true],
    ['clicks-rw', 'read', { topic: 'clicks' }, true],
    ['clicks-rw', 'write', { topic: 'clicks' }, true],
    ['clicks-rw', 'describe', { topic: 'orders' }, false],
    ['clicks-rw', 'read', { topic: 'orders' }, false],
    ['clicks-rw', 'read', { group: 'g' }, true],
    ['clicks-rw', 'write', { transactionalId: 't' }, true],
    ['clicks-rw', 'admin', { topic: 'clicks' }, false],
    ['clicks-admin', 'admin', { topic: 'clicks' }, true],
    ['clicks-admin', 'admin', { topic: 'orders' }, false],
    ['clicks-admin', 'admin', 'cluster', false],
    ['clicks-admin', 'describe', 'cluster', true],
  ])('%s %s %j → %s', (name, operation, resource, allowed) => {
    expect(kafkaAllows(token(name), operation, resource)).toBe(allowed);
  });
});
