/**
 * Fetch (API key 1), versions 4 to 11: the non-flexible versions whose responses carry v2 record batches
 * (https://kafka.apache.org/protocol#The_Messages_Fetch). Version 12 is the first flexible one.
 *
 * Request: replica_id int32, max_wait_ms int32, min_bytes int32, max_bytes int32, isolation_level int8,
 *   session_id int32 (v7+), session_epoch int32 (v7+), topics [topic string, partitions [partition int32,
 *   current_leader_epoch int32 (v9+), fetch_offset int64, log_start_offset int64 (v5+),
 *   partition_max_bytes int32]], forgotten_topics_data [topic string, partitions [int32]] (v7+),
 *   rack_id string (v11+).
 * Response: throttle_time_ms int32, error_code int16 (v7+), session_id int32 (v7+), responses [topic
 *   string, partitions [partition_index int32, error_code int16, high_watermark int64,
 *   last_stable_offset int64, log_start_offset int64 (v5+), aborted_transactions nullable [producer_id
 *   int64, first_offset int64], preferred_read_replica int32 (v11+), records nullable bytes]].
 */
import { KafkaDecodeError, type KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';

/** The versions mink decodes and encodes. */
export const FETCH_VERSIONS = { min: 4, max: 11 } as const;

/**
 * The lowest version mink advertises in ApiVersions, for the reason given at `PRODUCE_ADVERTISED_MIN`:
 * librdkafka enables features (message format v1, throttle time) only when the advertised range overlaps
 * Fetch 1-2. Versions below `FETCH_VERSIONS.min` still fail to decode.
 */
export const FETCH_ADVERTISED_MIN = 0;

/** Kafka's isolation levels: every record, or only records below the last stable offset. */
export const ISOLATION_LEVELS = { READ_UNCOMMITTED: 0, READ_COMMITTED: 1 } as const;
export type IsolationLevel = (typeof ISOLATION_LEVELS)[keyof typeof ISOLATION_LEVELS];

/**
 * A decoded fetch request. Fields a version lacks hold the defaults of Kafka's spec: session id 0 and
 * session epoch -1 (no fetch session) before v7, current leader epoch -1 before v9, log start offset -1
 * before v5, rack id '' before v11. Topics and partitions keep the request's order, which since v3 is the
 * order in which the broker fills the response up to `maxBytes`.
 */
export interface FetchRequest {
  /** -1 for a consumer; a broker id for a follower replica. */
  replicaId: number;
  maxWaitMs: number;
  minBytes: number;
  maxBytes: number;
  isolationLevel: IsolationLevel;
  sessionId: number;
  sessionEpoch: number;
  topics: FetchTopic[];
  /** Partitions to drop from an incremental fetch session (v7+). */
  forgottenTopicsData: FetchForgottenTopic[];
  rackId: string;
}

export interface FetchTopic {
  topic: string;
  partitions: FetchPartition[];
}

export interface FetchPartition {
  partition: number;
  currentLeaderEpoch: number;
  fetchOffset: number;
  /** Only a follower sends one; -1 from consumers. */
  logStartOffset: number;
  partitionMaxBytes: number;
}

export interface FetchForgottenTopic {
  topic: string;
  partitions: number[];
}

/** The fetch response to encode; fields a version lacks are left out of its bytes. */
export interface FetchResponse {
  throttleTimeMs: number;
  /** v7+: a session-level error; default 0. */
  errorCode?: number;
  /** v7+: the fetch session id, 0 when there is no session; default 0. */
  sessionId?: number;
  responses: FetchTopicResponse[];
}

export interface FetchTopicResponse {
  topic: string;
  partitions: FetchPartitionResponse[];
}

export interface FetchPartitionResponse {
  partitionIndex: number;
  errorCode: number;
  highWatermark: number;
  lastStableOffset: number;
  /** v5+. */
  logStartOffset: number;
  /** Aborted transactions overlapping the records (read-committed fetches); default null (none). */
  abortedTransactions?: readonly FetchAbortedTransaction[] | null;
  /** v11+: the replica the consumer should fetch from next, -1 for this one; default -1. */
  preferredReadReplica?: number;
  /**
   * Stored record batches, in offset order, sent back to back under one int32 length. Each array goes to
   * the writer as a part of its own (no copy), so it must not change until the response is sent. Null
   * writes a null record set; an empty list an empty one.
   */
  records: readonly Uint8Array[] | null;
}

export interface FetchAbortedTransaction {
  producerId: number;
  firstOffset: number;
}

/** The largest record set one partition can carry: its length is an int32. */
const RECORDS_BYTES_MAX = 0x7fffffff;

/** The first version that carries each field not every supported version has. */
const SINCE_VERSION = {
  logStartOffset: 5,
  // KIP-227: incremental fetch sessions.
  session: 7,
  forgottenTopicsData: 7,
  responseErrorCode: 7,
  // KIP-320: fencing of fetches from a stale leader.
  currentLeaderEpoch: 9,
  // KIP-392: fetching from the closest replica.
  rackId: 11,
  preferredReadReplica: 11,
} as const;

function isSupported(version: number): boolean {
  return Number.isInteger(version) && version >= FETCH_VERSIONS.min && version <= FETCH_VERSIONS.max;
}

/**
 * Decodes a fetch request body (the reader positioned after the request header). An isolation level other
 * than 0 or 1 is refused, as Kafka refuses it; so are bytes after the body.
 */
export function decodeFetchRequest(reader: KafkaReader, version: number): FetchRequest {
  if (!isSupported(version)) throw new KafkaDecodeError(`Fetch: version ${version} is outside ${FETCH_VERSIONS.min}–${FETCH_VERSIONS.max}`);
  const replicaId = reader.int32('replica_id');
  const maxWaitMs = reader.int32('max_wait_ms');
  const minBytes = reader.int32('min_bytes');
  const maxBytes = reader.int32('max_bytes');
  const isolationLevel = reader.int8('isolation_level');
  if (isolationLevel !== ISOLATION_LEVELS.READ_UNCOMMITTED && isolationLevel !== ISOLATION_LEVELS.READ_COMMITTED) {
    throw new KafkaDecodeError(`isolation_level: unknown level ${isolationLevel}`);
  }
  const sessionId = version >= SINCE_VERSION.session ? reader.int32('session_id') : 0;
  const sessionEpoch = version >= SINCE_VERSION.session ? reader.int32('session_epoch') : -1;
  const topics = reader.array(
    (topic): FetchTopic => ({
      topic: topic.string('topic'),
      partitions: topic.array(
        (partition): FetchPartition => ({
          partition: partition.int32('partition'),
          currentLeaderEpoch: version >= SINCE_VERSION.currentLeaderEpoch ? partition.int32('current_leader_epoch') : -1,
          fetchOffset: partition.int64Number('fetch_offset'),
          logStartOffset: version >= SINCE_VERSION.logStartOffset ? partition.int64Number('log_start_offset') : -1,
          partitionMaxBytes: partition.int32('partition_max_bytes'),
        }),
        'partitions',
      ),
    }),
    'topics',
  );
  const forgottenTopicsData =
    version >= SINCE_VERSION.forgottenTopicsData
      ? reader.array(
          (forgotten): FetchForgottenTopic => ({
            topic: forgotten.string('forgotten topic'),
            partitions: forgotten.array((partition) => partition.int32('forgotten partition'), 'forgotten partitions'),
          }),
          'forgotten_topics_data',
        )
      : [];
  const rackId = version >= SINCE_VERSION.rackId ? reader.string('rack_id') : '';
  if (reader.remaining !== 0) throw new KafkaDecodeError(`Fetch v${version}: ${reader.remaining} bytes after the request body`);
  return { replicaId, maxWaitMs, minBytes, maxBytes, isolationLevel, sessionId, sessionEpoch, topics, forgottenTopicsData, rackId };
}

/** Encodes a fetch response body (no header, no size prefix). An unsupported version is a caller's bug. */
export function encodeFetchResponse(writer: KafkaWriter, version: number, response: FetchResponse): void {
  if (!isSupported(version)) throw new RangeError(`Fetch: cannot encode version ${version}`);
  writer.int32(response.throttleTimeMs);
  if (version >= SINCE_VERSION.responseErrorCode) writer.int16(response.errorCode ?? 0);
  if (version >= SINCE_VERSION.session) writer.int32(response.sessionId ?? 0);
  writer.array(response.responses, (topicWriter, topic) => {
    topicWriter.string(topic.topic);
    topicWriter.array(topic.partitions, (partitionWriter, partition) => {
      partitionWriter.int32(partition.partitionIndex).int16(partition.errorCode).int64(partition.highWatermark).int64(partition.lastStableOffset);
      if (version >= SINCE_VERSION.logStartOffset) partitionWriter.int64(partition.logStartOffset);
      partitionWriter.nullableArray(partition.abortedTransactions ?? null, (abortedWriter, aborted) => {
        abortedWriter.int64(aborted.producerId).int64(aborted.firstOffset);
      });
      if (version >= SINCE_VERSION.preferredReadReplica) partitionWriter.int32(partition.preferredReadReplica ?? -1);
      writeRecordSet(partitionWriter, partition.records);
    });
  });
}

/** One int32 length for all the batches, then each batch as a part of its own. */
function writeRecordSet(writer: KafkaWriter, batches: readonly Uint8Array[] | null): void {
  if (batches === null) {
    writer.int32(-1);
    return;
  }
  let totalBytes = 0;
  for (const batch of batches) totalBytes += batch.byteLength;
  if (totalBytes > RECORDS_BYTES_MAX) throw new Error(`a record set of ${totalBytes} bytes does not fit an int32 length`);
  writer.int32(totalBytes);
  for (const batch of batches) writer.rawPart(batch);
}
