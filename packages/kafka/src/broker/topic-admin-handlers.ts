import { API_KEYS, ERROR_CODES } from '../wire/codes';
import type { KafkaReader } from '../wire/reader';
import type { KafkaWriter } from '../wire/writer';
import { ALTER_CONFIGS_VERSIONS, decodeAlterConfigsRequest, encodeAlterConfigsResponse, type AlterConfigsResourceResult } from '../messages/alter-configs';
import { DELETE_RECORDS_VERSIONS, decodeDeleteRecordsRequest, encodeDeleteRecordsResponse, type DeleteRecordsPartitionResult } from '../messages/delete-records';
import { CONFIG_RESOURCE_TYPES } from '../messages/describe-configs';
import { INCREMENTAL_ALTER_CONFIGS_VERSIONS, decodeIncrementalAlterConfigsRequest, encodeIncrementalAlterConfigsResponse } from '../messages/incremental-alter-configs';
import { OFFSET_FOR_LEADER_EPOCH_VERSIONS, decodeOffsetForLeaderEpochRequest, encodeOffsetForLeaderEpochResponse, type OffsetForLeaderPartitionResult } from '../messages/offset-for-leader-epoch';
import { kafkaErrorCodeOf } from './error-mapping';
import type { BrokerContext, ServedApi } from './kafka-broker';
import { epochEndOffset } from './leader-epochs';
import { changesOfAlterConfigs, changesOfIncrementalAlterConfigs, type ConfigRefusal, type RequestRefusal, type TopicConfigChange } from './topic-configs';

/**
 * The topic administration APIs beyond create and delete: AlterConfigs and IncrementalAlterConfigs
 * (`retention.ms`, see topic-configs.ts), DeleteRecords (a partition's log start moved up) and
 * OffsetForLeaderEpoch (a consumer's truncation check, see leader-epochs.ts).
 */
export function topicAdminApis(): [number, ServedApi][] {
  const api = (range: { min: number; max: number }, handle: ServedApi['handle']): ServedApi => ({ advertised: range, served: range, handle });
  return [
    [API_KEYS.AlterConfigs, api(ALTER_CONFIGS_VERSIONS, alterConfigs)],
    [API_KEYS.IncrementalAlterConfigs, api(INCREMENTAL_ALTER_CONFIGS_VERSIONS, incrementalAlterConfigs)],
    [API_KEYS.DeleteRecords, api(DELETE_RECORDS_VERSIONS, deleteRecords)],
    [API_KEYS.OffsetForLeaderEpoch, api(OFFSET_FOR_LEADER_EPOCH_VERSIONS, offsetForLeaderEpoch)],
  ];
}

/** The answer for one resource of a config change: refused before the backend, or the backend's outcome. */
async function alterResource(
  { backend, allows }: BrokerContext,
  resource: { resourceType: number; resourceName: string },
  changes: TopicConfigChange[] | ConfigRefusal | RequestRefusal,
  validateOnly: boolean,
): Promise<AlterConfigsResourceResult> {
  const answer = (errorCode: number, errorMessage: string | null): AlterConfigsResourceResult => ({ ...resource, errorCode, errorMessage });
  if (resource.resourceType === CONFIG_RESOURCE_TYPES.topic && !allows('admin', { topic: resource.resourceName })) {
    return answer(ERROR_CODES.TOPIC_AUTHORIZATION_FAILED, `this connection may not change topic '${resource.resourceName}'`);
  }
  if (resource.resourceType === CONFIG_RESOURCE_TYPES.broker) return answer(ERROR_CODES.INVALID_REQUEST, "mink's broker settings are its environment (MINK_*): they are not changed through Kafka");
  if (resource.resourceType !== CONFIG_RESOURCE_TYPES.topic) return answer(ERROR_CODES.INVALID_REQUEST, `resource type ${resource.resourceType} has no configs to change`);
  if (!Array.isArray(changes)) return answer('invalidRequest' in changes ? ERROR_CODES.INVALID_REQUEST : ERROR_CODES.INVALID_CONFIG, changes.refused);
  if (!backend.topic(resource.resourceName)) return answer(ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION, `topic '${resource.resourceName}' does not exist`);
  try {
    await backend.alterTopicConfigs(resource.resourceName, changes, validateOnly);
    return answer(ERROR_CODES.NONE, null);
  } catch (error) {
    return answer(kafkaErrorCodeOf(error, 'alterConfigs'), error instanceof Error ? error.message : String(error));
  }
}

async function alterConfigs(context: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const request = decodeAlterConfigsRequest(reader, version);
  const responses = await Promise.all(
    request.resources.map((resource) => alterResource(context, resource, changesOfAlterConfigs(resource.configs), request.validateOnly)),
  );
  encodeAlterConfigsResponse(writer, version, { throttleTimeMs: 0, responses });
  return 'respond';
}

async function incrementalAlterConfigs(context: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const request = decodeIncrementalAlterConfigsRequest(reader, version);
  const responses = await Promise.all(
    request.resources.map((resource) => alterResource(context, resource, changesOfIncrementalAlterConfigs(resource.configs), request.validateOnly)),
  );
  encodeIncrementalAlterConfigsResponse(writer, version, { throttleTimeMs: 0, responses });
  return 'respond';
}

async function deleteRecords({ backend, allows }: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const request = decodeDeleteRecordsRequest(reader, version);
  const topics = await Promise.all(
    request.topics.map(async (topic) => ({
      name: topic.name,
      partitions: await Promise.all(
        topic.partitions.map(async (partition): Promise<DeleteRecordsPartitionResult> => {
          if (!allows('admin', { topic: topic.name })) return { partitionIndex: partition.partitionIndex, lowWatermark: -1, errorCode: ERROR_CODES.TOPIC_AUTHORIZATION_FAILED };
          if (partition.offset < -1) return { partitionIndex: partition.partitionIndex, lowWatermark: -1, errorCode: ERROR_CODES.OFFSET_OUT_OF_RANGE };
          try {
            const lowWatermark = await backend.deleteRecords(topic.name, partition.partitionIndex, partition.offset);
            return { partitionIndex: partition.partitionIndex, lowWatermark, errorCode: ERROR_CODES.NONE };
          } catch (error) {
            return { partitionIndex: partition.partitionIndex, lowWatermark: -1, errorCode: kafkaErrorCodeOf(error, 'deleteRecords') };
          }
        }),
      ),
    })),
  );
  encodeDeleteRecordsResponse(writer, version, { throttleTimeMs: 0, topics });
  return 'respond';
}

async function offsetForLeaderEpoch({ backend, allows }: BrokerContext, reader: KafkaReader, version: number, writer: KafkaWriter): Promise<'respond'> {
  const request = decodeOffsetForLeaderEpochRequest(reader, version);
  const topics = await Promise.all(
    request.topics.map(async (topic) => {
      const info = backend.topic(topic.topic);
      return {
        topic: topic.topic,
        partitions: await Promise.all(
          topic.partitions.map(async (asked): Promise<OffsetForLeaderPartitionResult> => {
            const failed = (errorCode: number): OffsetForLeaderPartitionResult => ({ errorCode, partition: asked.partition, leaderEpoch: -1, endOffset: -1 });
            if (!allows('read', { topic: topic.topic })) return failed(ERROR_CODES.TOPIC_AUTHORIZATION_FAILED);
            const partition = info?.partitions.find((each) => each.partition === asked.partition);
            if (!partition) return failed(ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION);
            if (partition.leader?.nodeId !== backend.self.nodeId) return failed(partition.leader ? ERROR_CODES.NOT_LEADER_OR_FOLLOWER : ERROR_CODES.LEADER_NOT_AVAILABLE);
            try {
              const logEnd = await backend.listOffset(topic.topic, asked.partition, -1, false);
              return { partition: asked.partition, ...epochEndOffset(asked, { leaderEpoch: partition.leaderEpoch, logEndOffset: logEnd.offset }) };
            } catch (error) {
              return failed(kafkaErrorCodeOf(error, 'listOffsets'));
            }
          }),
        ),
      };
    }),
  );
  encodeOffsetForLeaderEpochResponse(writer, version, { throttleTimeMs: 0, topics });
  return 'respond';
}
