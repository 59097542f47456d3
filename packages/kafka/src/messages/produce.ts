/**
 * Produce (API key 0), versions 3 to 8: the non-flexible versions that carry v2 record batches
 * (https://kafka.apache.org/protocol#The_Messages_Produce). Version 9 is the first flexible one.
 *
 * Request: transactional_id nullable string, acks int16, timeout_ms int32,
 *   topic_data [name string, partition_data [index int32, records nullable bytes]].
 * Response: responses [name string, partition_responses [index int32, error_code int16, base_offset int64,
 *   log_append_time_ms int64, log_start_offset int64 (v5+), record_errors [batch_index int32,
 *   batch_index_error_message nullable string] (v8+), error_message nullable string (v8+)]],
 *   throttle_time_ms int32.
 * Versions 3 to 7 have the same request; 4 and 6 add meanings (KAFKA_STORAGE_ERROR, throttling before
 * the response), 7 allows zstd batches, 8 adds the per-record errors.
 */
import { KafkaDecodeError, type KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';

/** The versions mink decodes and encodes. */
export const PRODUCE_VERSIONS = { min: 3, max: 8 } as const;

/**
 * The lowest version mink advertises in ApiVersions. librdkafka decides its features (message format,
 * throttle time, ...) by checking that the broker's advertised range overlaps old version ranges such as
 * Produce 0-2, so a range starting at 3 would switch features off. Requests below `PRODUCE_VERSIONS.min`
 * still fail to decode (they carry legacy message sets mink does not store); a client picks the
 * highest version both sides know, so one that speaks v3 never sends less.
 */
export const PRODUCE_ADVERTISED_MIN = 0;

/**
 * A decoded produce request. `records` is the partition's record set as bytes, a view of the request
 * frame (no copy, so it lives only as long as the frame); it is split and checked per partition
 * (`splitRecordBatches`), so that one corrupt batch fails its partition rather than the whole request.
 * Topics and partitions keep the request's order. `acks` is passed on unchecked (Kafka answers values
 * other than -1, 0, 1 with INVALID_REQUIRED_ACKS per partition).
 */
export interface ProduceRequest {
  transactionalId: string | null;
  acks: number;
  timeoutMs: number;
  topicData: ProduceTopicData[];
}

export interface ProduceTopicData {
  name: string;
  partitionData: ProducePartitionData[];
}

export interface ProducePartitionData {
  index: number;
  records: Uint8Array | null;
}

/** The produce response to encode; fields a version lacks are left out of its bytes. */
export interface ProduceResponse {
  responses: ProduceTopicResponse[];
  throttleTimeMs: number;
}

export interface ProduceTopicResponse {
  name: string;
  partitionResponses: ProducePartitionResponse[];
}

export interface ProducePartitionResponse {
  index: number;
  errorCode: number;
  /** The offset given to the first record of the partition's batch, or -1 on error. */
  baseOffset: number;
  /** The broker's append time for log-append-time topics, -1 for create-time ones. */
  logAppendTimeMs: number;
  /** v5+: the partition's log start offset, or -1. */
  logStartOffset: number;
  /** v8+: the records (by index within the batch) that made the broker drop it; default none. */
  recordErrors?: readonly ProduceRecordError[];
  /** v8+: what the dropped records have in common; default null. */
  errorMessage?: string | null;
}

export interface ProduceRecordError {
  batchIndex: number;
  batchIndexErrorMessage: string | null;
}

/** The first version that carries each field not every supported version has. */
const SINCE_VERSION = {
  logStartOffset: 5,
  // KIP-467: which records made the broker drop a batch.
  recordErrors: 8,
  errorMessage: 8,
} as const;

function isSupported(version: number): boolean {
  return Number.isInteger(version) && version >= PRODUCE_VERSIONS.min && version <= PRODUCE_VERSIONS.max;
}

/**
 * Decodes a produce request body (the reader positioned after the request header). The body must end
 * where the frame ends: extra bytes mean a layout mink does not know, so they are refused.
 */
export function decodeProduceRequest(reader: KafkaReader, version: number): ProduceRequest {
  if (!isSupported(version)) throw new KafkaDecodeError(`Produce: version ${version} is outside ${PRODUCE_VERSIONS.min}–${PRODUCE_VERSIONS.max}`);
  const request: ProduceRequest = {
    transactionalId: reader.nullableString('transactional_id'),
    acks: reader.int16('acks'),
    timeoutMs: reader.int32('timeout_ms'),
    topicData: reader.array(
      (topic) => ({
        name: topic.string('topic name'),
        partitionData: topic.array(
          (partition) => ({
            index: partition.int32('partition index'),
            records: partition.nullableBytes('records'),
          }),
          'partition_data',
        ),
      }),
      'topic_data',
    ),
  };
  if (reader.remaining !== 0) throw new KafkaDecodeError(`Produce v${version}: ${reader.remaining} bytes after the request body`);
  return request;
}

/** Encodes a produce response body (no header, no size prefix). An unsupported version is a caller's bug. */
export function encodeProduceResponse(writer: KafkaWriter, version: number, response: ProduceResponse): void {
  if (!isSupported(version)) throw new RangeError(`Produce: cannot encode version ${version}`);
  writer.array(response.responses, (topicWriter, topic) => {
    topicWriter.string(topic.name);
    topicWriter.array(topic.partitionResponses, (partitionWriter, partition) => {
      partitionWriter.int32(partition.index).int16(partition.errorCode).int64(partition.baseOffset).int64(partition.logAppendTimeMs);
      if (version >= SINCE_VERSION.logStartOffset) partitionWriter.int64(partition.logStartOffset);
      if (version >= SINCE_VERSION.recordErrors) {
        partitionWriter.array(partition.recordErrors ?? [], (errorWriter, recordError) => {
          errorWriter.int32(recordError.batchIndex).nullableString(recordError.batchIndexErrorMessage);
        });
      }
      if (version >= SINCE_VERSION.errorMessage) partitionWriter.nullableString(partition.errorMessage ?? null);
    });
  });
  writer.int32(response.throttleTimeMs);
}
