import { API_KEYS, ERROR_CODES } from '../wire/codes';
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { COORDINATOR_KEY_TYPES, FIND_COORDINATOR_VERSIONS, decodeFindCoordinatorRequest, encodeFindCoordinatorResponse } from '../messages/find-coordinator';
import { JOIN_GROUP_VERSIONS, decodeJoinGroupRequest, encodeJoinGroupResponse } from '../messages/join-group';
import { SYNC_GROUP_VERSIONS, decodeSyncGroupRequest, encodeSyncGroupResponse } from '../messages/sync-group';
import { HEARTBEAT_VERSIONS, decodeHeartbeatRequest, encodeHeartbeatResponse } from '../messages/heartbeat';
import { LEAVE_GROUP_VERSIONS, decodeLeaveGroupRequest, encodeLeaveGroupResponse } from '../messages/leave-group';
import { OFFSET_COMMIT_VERSIONS, decodeOffsetCommitRequest, encodeOffsetCommitResponse, type OffsetCommitResponseTopic } from '../messages/offset-commit';
import { OFFSET_FETCH_VERSIONS, decodeOffsetFetchRequest, encodeOffsetFetchResponse, type OffsetFetchResponseTopic } from '../messages/offset-fetch';
import { DESCRIBE_GROUPS_VERSIONS, decodeDescribeGroupsRequest, encodeDescribeGroupsResponse } from '../messages/describe-groups';
import { LIST_GROUPS_VERSIONS, decodeListGroupsRequest, encodeListGroupsResponse } from '../messages/list-groups';
import { kafkaErrorCodeOf } from './error-mapping';
import type { CommittedOffset } from './backend';
import type { BrokerContext, ServedApi } from './kafka-broker';

/**
 * The consumer-group APIs (docs/architecture.md §12, Kafka's classic group protocol). A group's coordinator is the leader
 * of the bucket of the offsets table its id hashes to, so groups move with failover like any bucket: other
 * nodes answer NOT_COORDINATOR, and FindCoordinator names the leader. Membership is held by
 * `GroupCoordinator` on that node; committed offsets are rows of the offsets table.
 */
export function groupApis(): [number, ServedApi][] {
  const api = (range: { min: number; max: number }, handle: ServedApi['handle']): ServedApi => ({ advertised: range, served: range, handle });
  return [
    [API_KEYS.FindCoordinator, api(FIND_COORDINATOR_VERSIONS, findCoordinator)],
    [API_KEYS.JoinGroup, api(JOIN_GROUP_VERSIONS, joinGroup)],
    [API_KEYS.SyncGroup, api(SYNC_GROUP_VERSIONS, syncGroup)],
    [API_KEYS.Heartbeat, api(HEARTBEAT_VERSIONS, heartbeat)],
    [API_KEYS.LeaveGroup, api(LEAVE_GROUP_VERSIONS, leaveGroup)],
    [API_KEYS.OffsetCommit, api(OFFSET_COMMIT_VERSIONS, offsetCommit)],
    [API_KEYS.OffsetFetch, api(OFFSET_FETCH_VERSIONS, offsetFetch)],
    [API_KEYS.DescribeGroups, api(DESCRIBE_GROUPS_VERSIONS, describeGroups)],
    [API_KEYS.ListGroups, api(LIST_GROUPS_VERSIONS, listGroups)],
  ];
}

/**
 * NONE when this node coordinates the group and the connection may use it (the read scope), else the error a
 * group request gets here: GROUP_AUTHORIZATION_FAILED without the scope, NOT_COORDINATOR
 * when another node does (the client asks FindCoordinator again), COORDINATOR_NOT_AVAILABLE while nobody
 * does. A group this node held and no longer coordinates is forgotten, its waiting members answered.
 */
function coordinationErrorOf(context: BrokerContext, groupId: string): number {
  if (!context.allows('read', { group: groupId })) return ERROR_CODES.GROUP_AUTHORIZATION_FAILED;
  const place = context.backend.groupCoordinator(groupId);
  if (place.kind === 'here') return ERROR_CODES.NONE;
  context.groups.forget(groupId);
  return place.kind === 'elsewhere' ? ERROR_CODES.NOT_COORDINATOR : ERROR_CODES.COORDINATOR_NOT_AVAILABLE;
}

async function findCoordinator(context: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const request = decodeFindCoordinatorRequest(reader, version);
  const nobody = { nodeId: -1, host: '', port: -1 };
  const transaction = request.keyType === COORDINATOR_KEY_TYPES.transaction;
  if (!transaction && request.keyType !== COORDINATOR_KEY_TYPES.group) {
    encodeFindCoordinatorResponse(writer, version, { throttleTimeMs: 0, errorCode: ERROR_CODES.INVALID_REQUEST, errorMessage: `unknown coordinator key type ${request.keyType}`, ...nobody });
    return 'respond';
  }
  if (transaction ? !context.allows('write', { transactionalId: request.key }) : !context.allows('read', { group: request.key })) {
    const errorCode = transaction ? ERROR_CODES.TRANSACTIONAL_ID_AUTHORIZATION_FAILED : ERROR_CODES.GROUP_AUTHORIZATION_FAILED;
    encodeFindCoordinatorResponse(writer, version, { throttleTimeMs: 0, errorCode, errorMessage: `this connection may not use ${transaction ? 'transactional id' : 'group'} '${request.key}'`, ...nobody });
    return 'respond';
  }
  if (request.key === '') {
    const errorCode = transaction ? ERROR_CODES.INVALID_REQUEST : ERROR_CODES.INVALID_GROUP_ID;
    encodeFindCoordinatorResponse(writer, version, { throttleTimeMs: 0, errorCode, errorMessage: `a ${transaction ? 'transactional' : 'group'} id must not be empty`, ...nobody });
    return 'respond';
  }
  // A group's coordinator leads the group's bucket of the offsets table, a transactional id's its bucket of the transaction state table.
  const place = transaction ? context.backend.transactionCoordinator(request.key) : context.backend.groupCoordinator(request.key);
  if (place.kind === 'unavailable') {
    encodeFindCoordinatorResponse(writer, version, { throttleTimeMs: 0, errorCode: ERROR_CODES.COORDINATOR_NOT_AVAILABLE, errorMessage: place.reason, ...nobody });
    return 'respond';
  }
  const broker = place.kind === 'here' ? context.backend.self : place.broker;
  encodeFindCoordinatorResponse(writer, version, { throttleTimeMs: 0, errorCode: ERROR_CODES.NONE, errorMessage: null, nodeId: broker.nodeId, host: broker.host, port: broker.port });
  return 'respond';
}

async function joinGroup(context: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const request = decodeJoinGroupRequest(reader, version);
  const refused = coordinationErrorOf(context, request.groupId);
  const response =
    refused !== ERROR_CODES.NONE
      ? { throttleTimeMs: 0, errorCode: refused, generationId: -1, protocolName: '', leader: '', memberId: request.memberId, members: [] }
      : await context.groups.join(request, version, { clientId: context.clientId, clientHost: context.clientHost });
  encodeJoinGroupResponse(writer, version, response);
  return 'respond';
}

async function syncGroup(context: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const request = decodeSyncGroupRequest(reader, version);
  const refused = coordinationErrorOf(context, request.groupId);
  const response = refused !== ERROR_CODES.NONE ? { throttleTimeMs: 0, errorCode: refused, assignment: new Uint8Array(0) } : await context.groups.sync(request);
  encodeSyncGroupResponse(writer, version, response);
  return 'respond';
}

async function heartbeat(context: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const request = decodeHeartbeatRequest(reader, version);
  const refused = coordinationErrorOf(context, request.groupId);
  encodeHeartbeatResponse(writer, version, { throttleTimeMs: 0, errorCode: refused !== ERROR_CODES.NONE ? refused : context.groups.heartbeat(request) });
  return 'respond';
}

async function leaveGroup(context: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const request = decodeLeaveGroupRequest(reader, version);
  const refused = coordinationErrorOf(context, request.groupId);
  const response = refused !== ERROR_CODES.NONE ? { throttleTimeMs: 0, errorCode: refused, members: [] } : context.groups.leave(request);
  encodeLeaveGroupResponse(writer, version, response);
  return 'respond';
}

async function offsetCommit(context: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const request = decodeOffsetCommitRequest(reader, version);
  // Offsets of a topic the connection may not read are refused one by one (TOPIC_AUTHORIZATION_FAILED); the others are committed.
  const readable = (topic: string) => context.allows('read', { topic });
  const answerAll = (errorCode: number): OffsetCommitResponseTopic[] =>
    request.topics.map((topic) => {
      const topicErrorCode = errorCode === ERROR_CODES.NONE && !readable(topic.name) ? ERROR_CODES.TOPIC_AUTHORIZATION_FAILED : errorCode;
      return { name: topic.name, partitions: topic.partitions.map((partition) => ({ partitionIndex: partition.partitionIndex, errorCode: topicErrorCode })) };
    });
  let errorCode = coordinationErrorOf(context, request.groupId);
  if (errorCode === ERROR_CODES.NONE) errorCode = context.groups.commitErrorOf(request.groupId, request.generationId, request.memberId, request.groupInstanceId);
  if (errorCode === ERROR_CODES.NONE) {
    const offsets: CommittedOffset[] = request.topics.filter((topic) => readable(topic.name)).flatMap((topic) =>
      topic.partitions.map((partition) => ({
        topic: topic.name,
        partition: partition.partitionIndex,
        offset: partition.committedOffset,
        leaderEpoch: partition.committedLeaderEpoch,
        metadata: partition.committedMetadata,
      })),
    );
    try {
      if (offsets.length > 0) await context.backend.commitOffsets(request.groupId, offsets);
    } catch (error) {
      // The offsets table's bucket moved or failed mid-commit: the client finds the coordinator again and retries.
      errorCode = kafkaErrorCodeOf(error, 'offsetCommit');
    }
  }
  encodeOffsetCommitResponse(writer, version, { throttleTimeMs: 0, topics: answerAll(errorCode) });
  return 'respond';
}

async function offsetFetch(context: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const request = decodeOffsetFetchRequest(reader, version);
  const wanted = request.topics?.flatMap((topic) => topic.partitionIndexes.map((partition) => ({ topic: topic.name, partition }))) ?? null;
  // Versions 0–1 have no group-level error: it goes on every partition asked for.
  const failed = (errorCode: number): 'respond' => {
    const topics: OffsetFetchResponseTopic[] = (request.topics ?? []).map((topic) => ({
      name: topic.name,
      partitions: topic.partitionIndexes.map((partitionIndex) => ({ partitionIndex, committedOffset: -1, committedLeaderEpoch: -1, metadata: '', errorCode })),
    }));
    encodeOffsetFetchResponse(writer, version, { throttleTimeMs: 0, errorCode, topics });
    return 'respond';
  };
  const refused = coordinationErrorOf(context, request.groupId);
  if (refused !== ERROR_CODES.NONE) return failed(refused);
  let committed: CommittedOffset[];
  try {
    committed = await context.backend.fetchOffsets(request.groupId, wanted);
  } catch (error) {
    return failed(kafkaErrorCodeOf(error, 'offsetFetch'));
  }
  const byPartition = new Map(committed.map((offset) => [`${offset.topic}\u0000${offset.partition}`, offset]));
  // A topic the connection may not read: named, it is refused partition by partition; asked for all, it is left out.
  const readable = (topic: string) => context.allows('read', { topic });
  const topicNames = request.topics?.map((topic) => topic.name) ?? [...new Set(committed.map((offset) => offset.topic))].filter(readable);
  const topics: OffsetFetchResponseTopic[] = topicNames.map((name) => {
    const partitions = request.topics?.find((topic) => topic.name === name)?.partitionIndexes ?? committed.filter((offset) => offset.topic === name).map((offset) => offset.partition);
    const refused = !readable(name);
    return {
      name,
      partitions: partitions.map((partitionIndex) => {
        if (refused) return { partitionIndex, committedOffset: -1, committedLeaderEpoch: -1, metadata: '', errorCode: ERROR_CODES.TOPIC_AUTHORIZATION_FAILED };
        const found = byPartition.get(`${name}\u0000${partitionIndex}`);
        // A partition without a commit answers offset -1, which makes the consumer apply its reset policy.
        return { partitionIndex, committedOffset: found?.offset ?? -1, committedLeaderEpoch: found?.leaderEpoch ?? -1, metadata: found?.metadata ?? '', errorCode: ERROR_CODES.NONE };
      }),
    };
  });
  encodeOffsetFetchResponse(writer, version, { throttleTimeMs: 0, errorCode: ERROR_CODES.NONE, topics });
  return 'respond';
}

async function describeGroups(context: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const request = decodeDescribeGroupsRequest(reader, version);
  const groups = request.groups.map((groupId) => {
    const refused = coordinationErrorOf(context, groupId);
    if (refused !== ERROR_CODES.NONE) return { ...context.groups.describe(groupId), errorCode: refused };
    return context.groups.describe(groupId);
  });
  encodeDescribeGroupsResponse(writer, version, { throttleTimeMs: 0, groups });
  return 'respond';
}

async function listGroups(context: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  decodeListGroupsRequest(reader, version);
  // Each node lists the groups it coordinates, as every Kafka broker does; admin clients ask every broker.
  // A connection without the read scope sees no group, as a Kafka principal sees only the groups it may describe.
  const groups = context.groups.listGroups().filter((group) => context.allows('read', { group: group.groupId }) && context.backend.groupCoordinator(group.groupId).kind === 'here');
  encodeListGroupsResponse(writer, version, { throttleTimeMs: 0, errorCode: ERROR_CODES.NONE, groups });
  return 'respond';
}

