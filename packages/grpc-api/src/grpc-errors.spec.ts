import { status as GrpcStatus } from '@grpc/grpc-js';
import {
  ConflictError,
  InvalidArgumentError,
  MinkError,
  NotFoundError,
  NotLeaderError,
  PermissionDeniedError,
  TimeoutError,
  UnauthenticatedError,
  UnavailableError,
  type ErrorCode,
} from '@mink/protocol';
import { internalErrorMessage } from '@mink/runtime';
import { ERROR_METADATA, grpcFailureOf, inFlightRefusal, statusOfFailure } from './grpc-errors';

/**
 * Every mink error code on the gRPC wire: its status, its message as the details (except for an internal
 * error, whose message stays in the log and whose details carry only its id), and the trailing metadata a
 * client acts on (the code always; the redirect on NotLeader; the retry hint on Unavailable; the id on Internal).
 */

const ID = '3b9d7a52-0000-4000-8000-000000000000';

const REDIRECT = { table: 'events', bucket: 2, node: '3', to: 'mink.node.3', leaderEpoch: 7, http: '127.0.0.1:9003' };

const CASES: [string, unknown, string, GrpcStatus, Record<string, string>][] = [
  // name, error, method, status, metadata
  ['InvalidArgument', new InvalidArgumentError('rows_json must be a JSON array'), 'Put', GrpcStatus.INVALID_ARGUMENT, { 'mink-error-code': 'InvalidArgument' }],
  ['NotFound', new NotFoundError("table 'x' does not exist"), 'DescribeTable', GrpcStatus.NOT_FOUND, { 'mink-error-code': 'NotFound' }],
  ['Conflict on create', new ConflictError("table 'x' already exists"), 'CreateTable', GrpcStatus.ALREADY_EXISTS, { 'mink-error-code': 'Conflict' }],
  ['Conflict elsewhere', new ConflictError('writer w sequence 3 is older'), 'Append', GrpcStatus.ABORTED, { 'mink-error-code': 'Conflict' }],
  ['Unavailable with a hint', new UnavailableError('bucket 0 is opening', 250), 'Scan', GrpcStatus.UNAVAILABLE, { 'mink-error-code': 'Unavailable', 'mink-retry-after-ms': '250' }],
  ['Unavailable without one', new MinkError('Unavailable', 'busy'), 'Append', GrpcStatus.UNAVAILABLE, { 'mink-error-code': 'Unavailable', 'mink-retry-after-ms': '1000' }],
  ['NotLeader', new NotLeaderError('bucket 2 moved', REDIRECT), 'Lookup', GrpcStatus.UNAVAILABLE, { 'mink-error-code': 'NotLeader', 'mink-redirect': JSON.stringify(REDIRECT) }],
  ['Fenced', new MinkError('Fenced', 'epoch 3 is not 4'), 'Rebalance', GrpcStatus.ABORTED, { 'mink-error-code': 'Fenced' }],
  ['Timeout', new TimeoutError('no answer in 10 s'), 'ClusterStatus', GrpcStatus.DEADLINE_EXCEEDED, { 'mink-error-code': 'Timeout' }],
  ['Unauthenticated', new UnauthenticatedError('this gateway needs a bearer token'), 'ListTables', GrpcStatus.UNAUTHENTICATED, { 'mink-error-code': 'Unauthenticated' }],
  ['PermissionDenied', new PermissionDeniedError("token 'analyst' lacks the 'write' scope"), 'Append', GrpcStatus.PERMISSION_DENIED, { 'mink-error-code': 'PermissionDenied' }],
  ['Internal', new MinkError('Internal', "S3 refused GetObject of 'wal/1/3/17'"), 'Scan', GrpcStatus.INTERNAL, { 'mink-error-code': 'Internal', 'mink-error-id': ID }],
  ['a bug', new TypeError('x is undefined'), 'Scan', GrpcStatus.INTERNAL, { 'mink-error-code': 'Internal', 'mink-error-id': ID }],
  ['a thrown string', 'odd', 'Scan', GrpcStatus.INTERNAL, { 'mink-error-code': 'Internal', 'mink-error-id': ID }],
];

describe('grpcFailureOf', () => {
  it.each(CASES)('%s', (_name, error, method, status, metadata) => {
    const failure = grpcFailureOf(error, method, ID);
    const internal = status === GrpcStatus.INTERNAL;
    expect(failure).toEqual({ code: status, details: internal ? internalErrorMessage(ID) : error instanceof Error ? error.message : String(error), metadata });
  });

  it('maps every mink code to a status other than OK and UNKNOWN', () => {
    // Proves no code of @mink/protocol falls through: a new code fails here until it is mapped.
    const codes: ErrorCode[] = ['InvalidArgument', 'NotFound', 'Conflict', 'Unavailable', 'NotLeader', 'Fenced', 'Timeout', 'Unauthenticated', 'PermissionDenied', 'Internal'];
    for (const code of codes) {
      const { code: status, metadata } = grpcFailureOf(new MinkError(code, 'm'), 'Scan');
      expect([code, typeof status, status === GrpcStatus.OK || status === GrpcStatus.UNKNOWN]).toEqual([code, 'number', false]);
      expect(metadata[ERROR_METADATA.code]).toBe(code);
    }
  });

  it('puts the metadata into a grpc-js Metadata for the status', () => {
    const sent = statusOfFailure(grpcFailureOf(new UnavailableError('later', 300), 'Scan'));
    expect([sent.code, sent.details, sent.metadata!.get('mink-error-code'), sent.metadata!.get('mink-retry-after-ms')]).toEqual([GrpcStatus.UNAVAILABLE, 'later', ['Unavailable'], ['300']]);
  });
});

describe('inFlightRefusal', () => {
  it('is RESOURCE_EXHAUSTED with the Unavailable code and a retry hint, as the HTTP 503 of the same bound', () => {
    const sent = statusOfFailure(inFlightRefusal(200, 80, 1_000));
    expect([GrpcStatus[sent.code], sent.details, sent.metadata.get('mink-error-code'), sent.metadata.get('mink-retry-after-ms')]).toEqual([
      'RESOURCE_EXHAUSTED',
      'the gateway holds 200 bytes of gRPC messages; a message of 80 bytes does not fit below its bound: retry later',
      ['Unavailable'],
      ['1000'],
    ]);
  });
});
