import { accessRefusalOf, coversTable, type IssuedToken } from '@mink/protocol';

/**
 * What a Kafka request does to a resource, for the gateway's token scopes (docs/operations.md "Authentication"):
 * `describe` sees a topic's metadata (any scope), `read` consumes (Fetch, ListOffsets, offsets, group
 * membership), `write` produces (Produce, InitProducerId, transactions), `admin` administers (create and
 * delete topics, configs, DeleteRecords). A topic is a table: a token limited to some tables acts on those
 * topics only. Groups and transactional ids are not tables, so a token limited to tables may still join a
 * group or run a transaction: what it reads and writes there is checked topic by topic.
 */
export type KafkaAccessOperation = 'describe' | 'read' | 'write' | 'admin';

/**
 * The resource of a check: a topic; a group, a transactional id or the allocation of producer ids (for an
 * idempotent producer), none of which is limited by tables; or the cluster (every table at once).
 */
export type KafkaResource = { topic: string } | { group: string } | { transactionalId: string } | 'producerIds' | 'cluster';

/** Whether `token` may do `operation` on `resource`. */
export function kafkaAllows(token: IssuedToken, operation: KafkaAccessOperation, resource: KafkaResource): boolean {
  if (typeof resource === 'object' && 'topic' in resource) {
    return operation === 'describe' ? coversTable(token, resource.topic) : accessRefusalOf(token, { scope: operation, table: resource.topic }) === null;
  }
  if (operation === 'describe') return true;
  // The cluster (broker configs, every topic at once) is an operation on every table, as in the HTTP API;
  // a group or a transactional id is not, so only the scope counts there.
  if (resource === 'cluster') return accessRefusalOf(token, { scope: operation }) === null;
  return accessRefusalOf({ ...token, tables: null }, { scope: operation }) === null;
}
