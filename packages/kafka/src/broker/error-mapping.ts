import { MinkError } from '@mink/protocol';
import { ERROR_CODES } from '../wire/codes';
import { KafkaError } from './backend';

/** The request a failure happened in, since one mink outcome means different things to Kafka clients there. */
export type KafkaOperation = 'produce' | 'fetch' | 'listOffsets' | 'createTopics' | 'deleteTopics' | 'alterConfigs' | 'deleteRecords' | 'initProducerId' | 'offsetCommit' | 'offsetFetch' | 'transaction';

/**
 * The Kafka error code of a failure of one partition or topic. Clients act on these codes: a partition led
 * elsewhere (NOT_LEADER_OR_FOLLOWER) or still opening (LEADER_NOT_AVAILABLE) makes them refresh metadata
 * and retry; an unknown topic or a refused request is reported to the application. Anything that is not
 * an expected outcome is UNKNOWN_SERVER_ERROR.
 */
export function kafkaErrorCodeOf(error: unknown, operation: KafkaOperation): number {
  if (error instanceof KafkaError) return error.code;
  if (operation === 'offsetCommit' || operation === 'offsetFetch' || operation === 'transaction') return coordinatorErrorCodeOf(error, operation);
  // A fenced incarnation lost its buckets: the client must find the new leader.
  if (!(error instanceof MinkError)) return ERROR_CODES.UNKNOWN_SERVER_ERROR;
  switch (error.code) {
    case 'NotLeader':
    case 'Fenced':
      return ERROR_CODES.NOT_LEADER_OR_FOLLOWER;
    case 'Unavailable':
      if (operation === 'initProducerId') return ERROR_CODES.COORDINATOR_NOT_AVAILABLE;
      return operation === 'createTopics' || operation === 'deleteTopics' || operation === 'alterConfigs' || operation === 'deleteRecords' ? ERROR_CODES.REQUEST_TIMED_OUT : ERROR_CODES.LEADER_NOT_AVAILABLE;
    case 'Timeout':
      return ERROR_CODES.REQUEST_TIMED_OUT;
    case 'NotFound':
      return ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION;
    case 'Conflict':
      return operation === 'createTopics' ? ERROR_CODES.TOPIC_ALREADY_EXISTS : ERROR_CODES.INVALID_REQUEST;
    case 'InvalidArgument':
      switch (operation) {
        case 'produce':
          return ERROR_CODES.CORRUPT_MESSAGE;
        case 'alterConfigs':
          return ERROR_CODES.INVALID_CONFIG;
        case 'deleteRecords':
          return ERROR_CODES.POLICY_VIOLATION;
        default:
          return ERROR_CODES.INVALID_REQUEST;
      }
    case 'Unauthenticated':
    case 'PermissionDenied':
      return ERROR_CODES.TOPIC_AUTHORIZATION_FAILED;
    case 'Internal':
      return ERROR_CODES.UNKNOWN_SERVER_ERROR;
  }
}

/**
 * A failure of a coordinator's table (a group's offsets, a transactional id's state): led elsewhere now
 * (NOT_COORDINATOR, the client finds the coordinator again), else not served at the moment
 * (COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS for an offset fetch); clients retry all three.
 */
function coordinatorErrorCodeOf(error: unknown, operation: 'offsetCommit' | 'offsetFetch' | 'transaction'): number {
  const moved = error instanceof MinkError && (error.code === 'NotLeader' || error.code === 'Fenced');
  if (moved) return ERROR_CODES.NOT_COORDINATOR;
  return operation === 'offsetFetch' ? ERROR_CODES.COORDINATOR_LOAD_IN_PROGRESS : ERROR_CODES.COORDINATOR_NOT_AVAILABLE;
}
