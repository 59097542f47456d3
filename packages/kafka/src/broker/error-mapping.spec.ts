import { ConflictError, InvalidArgumentError, MinkError, NotFoundError, NotLeaderError, TimeoutError, UnavailableError } from '@mink/protocol';
import { ERROR_CODES } from '../wire/codes';
import { KafkaError } from './backend';
import { kafkaErrorCodeOf, type KafkaOperation } from './error-mapping';

const REDIRECT = { table: 't', bucket: 0, node: '2', to: 'mink.node.2', leaderEpoch: 3 };

describe('kafkaErrorCodeOf', () => {
  it.each<[string, unknown, KafkaOperation, number]>([
    ['a Kafka error as it is', new KafkaError(ERROR_CODES.OFFSET_OUT_OF_RANGE, 'x'), 'fetch', ERROR_CODES.OFFSET_OUT_OF_RANGE],
    ['another leader', new NotLeaderError('x', REDIRECT), 'produce', ERROR_CODES.NOT_LEADER_OR_FOLLOWER],
    ['a fenced commit', new MinkError('Fenced', 'x'), 'produce', ERROR_CODES.NOT_LEADER_OR_FOLLOWER],
    ['a bucket still opening', new UnavailableError('x'), 'produce', ERROR_CODES.LEADER_NOT_AVAILABLE],
    ['a bucket still opening, on fetch', new UnavailableError('x'), 'fetch', ERROR_CODES.LEADER_NOT_AVAILABLE],
    ['a coordinator unreachable on create', new UnavailableError('x'), 'createTopics', ERROR_CODES.REQUEST_TIMED_OUT],
    ['a timeout', new TimeoutError('x'), 'deleteTopics', ERROR_CODES.REQUEST_TIMED_OUT],
    ['an offsets table led elsewhere on commit', new NotLeaderError('x', REDIRECT), 'offsetCommit', ERROR_CODES.NOT_COORDINATOR],
    ['an offsets table fenced on fetch', new MinkError('Fenced', 'x'), 'offsetFetch', ERROR_CODES.NOT_COORDINATOR],
    ['an offsets bucket opening on commit', new UnavailableError('x'), 'offsetCommit', ERROR_CODES.COORDINATOR_NOT_AVAILABLE],
    ['an offsets bucket opening on fetch', new UnavailableError('x'), 'offsetFetch', ERROR_CODES.COORDINATOR_LOAD_IN_PROGRESS],
    ['a bug on an offset commit', new TypeError('x'), 'offsetCommit', ERROR_CODES.COORDINATOR_NOT_AVAILABLE],
    ['a metadata log unreachable on InitProducerId', new UnavailableError('x'), 'initProducerId', ERROR_CODES.COORDINATOR_NOT_AVAILABLE],
    ['an unknown table', new NotFoundError('x'), 'fetch', ERROR_CODES.UNKNOWN_TOPIC_OR_PARTITION],
    ['an existing table on create', new ConflictError('x'), 'createTopics', ERROR_CODES.TOPIC_ALREADY_EXISTS],
    ['a bad batch on produce', new InvalidArgumentError('x'), 'produce', ERROR_CODES.CORRUPT_MESSAGE],
    ['a bad spec on create', new InvalidArgumentError('x'), 'createTopics', ERROR_CODES.INVALID_REQUEST],
    ['a property the table refuses on a config change', new InvalidArgumentError('x'), 'alterConfigs', ERROR_CODES.INVALID_CONFIG],
    ['records the log will not delete (not yet in the lake)', new InvalidArgumentError('x'), 'deleteRecords', ERROR_CODES.POLICY_VIOLATION],
    ['a coordinator unreachable on a config change', new UnavailableError('x'), 'alterConfigs', ERROR_CODES.REQUEST_TIMED_OUT],
    ['a coordinator unreachable on a delete of records', new UnavailableError('x'), 'deleteRecords', ERROR_CODES.REQUEST_TIMED_OUT],
    ['a bug', new TypeError('x'), 'fetch', ERROR_CODES.UNKNOWN_SERVER_ERROR],
    ['an internal error', new MinkError('Internal', 'x'), 'produce', ERROR_CODES.UNKNOWN_SERVER_ERROR],
  ])('%s', (_case, error, operation, code) => {
    expect(kafkaErrorCodeOf(error, operation)).toBe(code);
  });
});
