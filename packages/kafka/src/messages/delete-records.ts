/**
 * DeleteRecords (key 21), DeleteRecordsRequest.json / DeleteRecordsResponse.json, versions 0-1 (version
 * 2 is the first flexible one). The requests of both versions are the same; version 1 is version 0
 * answered before throttling (KIP-219). Each partition's records below the given offset are deleted,
 * that is its low watermark (log start offset) is moved up to it.
 */
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { requireRequestVersion, requireResponseVersion, type VersionRange } from './header';

export const DELETE_RECORDS_VERSIONS: VersionRange = { min: 0, max: 1 };

/** The request offset that means "up to the high watermark", deleting every committed record. */
export const DELETE_RECORDS_HIGH_WATERMARK = -1;

export interface DeleteRecordsPartition {
  partitionIndex: number;
  /** The partition's new low watermark: every record below it is deleted. Or DELETE_RECORDS_HIGH_WATERMARK. */
  offset: number;
}

export interface DeleteRecordsTopic {
  name: string;
  partitions: DeleteRecordsPartition[];
}

/** A decoded DeleteRecords request (the same in versions 0 and 1). */
export interface DeleteRecordsRequest {
  topics: DeleteRecordsTopic[];
  /** How long the broker may wait for the deletion to complete. */
  timeoutMs: number;
}

export function decodeDeleteRecordsRequest(reader: KafkaReader, version: number): DeleteRecordsRequest {
  requireRequestVersion('DeleteRecords', DELETE_RECORDS_VERSIONS, version);
  const readPartition = (each: KafkaReader): DeleteRecordsPartition => ({
    partitionIndex: each.int32('DeleteRecords partition_index'),
    offset: each.int64Number('DeleteRecords offset'),
  });
  const topics = reader.array(
    (each): DeleteRecordsTopic => ({
      name: each.string('DeleteRecords topic name'),
      partitions: each.array(readPartition, 'DeleteRecords partitions'),
    }),
    'DeleteRecords topics',
  );
  const timeoutMs = reader.int32('DeleteRecords timeout_ms');
  return { topics, timeoutMs };
}

export interface DeleteRecordsPartitionResult {
  partitionIndex: number;
  /** The partition's low watermark after the deletion; -1 (unknown) on error. */
  lowWatermark: number;
  errorCode: number;
}

export interface DeleteRecordsTopicResult {
  name: string;
  partitions: readonly DeleteRecordsPartitionResult[];
}

/** A DeleteRecords answer, one result per partition of the request. */
export interface DeleteRecordsResponse {
  /** 0 when absent. */
  throttleTimeMs?: number;
  topics: readonly DeleteRecordsTopicResult[];
}

/** Writes the body of a DeleteRecords response (no header, no size). */
export function encodeDeleteRecordsResponse(writer: KafkaWriter, version: number, response: DeleteRecordsResponse): void {
  requireResponseVersion('DeleteRecords', DELETE_RECORDS_VERSIONS, version);
  writer.int32(response.throttleTimeMs ?? 0);
  writer.array(response.topics, (each, topic) => {
    each.string(topic.name);
    each.array(topic.partitions, (inner, partition) => void inner.int32(partition.partitionIndex).int64(partition.lowWatermark).int16(partition.errorCode));
  });
}
