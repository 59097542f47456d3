import { BadRequestException, HttpException, NotFoundException, PayloadTooLargeException } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import { InvalidArgumentError, MinkError, NotLeaderError, UnauthenticatedError, UnavailableError } from '@mink/protocol';
import { ERROR_ID_HEADER, httpErrorOf, internalErrorMessage, sendHttpError } from './http-errors';

/**
 * The HTTP answer of every exception (httpErrorOf, sendHttpError): typed outcomes and client errors keep
 * their messages, which are meant for the caller; an internal error never shows its own message, only an id
 * that the service's log line of the error carries beside the full error.
 */

const ID = '6f0c1d2e-0000-4000-8000-000000000000';
const REDIRECT = { table: 't', bucket: 0, node: '2', to: 'mink.node.2', leaderEpoch: 3 };

describe('httpErrorOf', () => {
  it.each<[string, unknown, number, { code: string; message: string }, boolean]>([
    ['a typed 4xx', new InvalidArgumentError('rows must be a list'), 400, { code: 'InvalidArgument', message: 'rows must be a list' }, false],
    ['a typed 401', new UnauthenticatedError('this gateway needs a bearer token'), 401, { code: 'Unauthenticated', message: 'this gateway needs a bearer token' }, false],
    ['a typed 503 (its message says what to do)', new UnavailableError('bucket 3 is opening', 300), 503, { code: 'Unavailable', message: 'bucket 3 is opening' }, false],
    ['a NotLeader that ran out of retries', new NotLeaderError('led elsewhere', REDIRECT), 503, { code: 'NotLeader', message: 'led elsewhere' }, false],
    ['an Internal MinkError (say, from a data node)', new MinkError('Internal', "S3 refused PutObject of 'wal/1/3/17': AccessDenied"), 500, { code: 'Internal', message: internalErrorMessage(ID) }, true],
    ['a bug', new TypeError("Cannot read properties of undefined (reading 'rows')"), 500, { code: 'Internal', message: internalErrorMessage(ID) }, true],
    ['a thrown string', 'secret detail', 500, { code: 'Internal', message: internalErrorMessage(ID) }, true],
    ['null', null, 500, { code: 'Internal', message: internalErrorMessage(ID) }, true],
    ["Nest's 404", new NotFoundException('Cannot GET /nowhere'), 404, { code: 'NotFound', message: 'Cannot GET /nowhere' }, false],
    ["Nest's 400", new BadRequestException('bad'), 400, { code: 'InvalidArgument', message: 'bad' }, false],
    ['a 413', new PayloadTooLargeException('the request body passes 67108864 bytes'), 413, { code: 'InvalidArgument', message: 'the request body passes 67108864 bytes' }, false],
    ['a 5xx of Nest, which keeps its status', new HttpException('upstream db at 10.0.0.7 refused', 502), 502, { code: 'Internal', message: internalErrorMessage(ID) }, true],
    ["a Fastify 4xx", Object.assign(new Error('Unsupported Media Type'), { statusCode: 415 }), 400, { code: 'InvalidArgument', message: 'Unsupported Media Type' }, false],
    ["a Fastify-like 5xx", Object.assign(new Error('socket hang up at 10.0.0.7'), { statusCode: 500 }), 500, { code: 'Internal', message: internalErrorMessage(ID) }, true],
  ])('%s', (_case, exception, status, error, internal) => {
    const answer = httpErrorOf(exception, ID);
    expect([answer.status, answer.body.error.code, answer.body.error.message, answer.internal]).toEqual([status, error.code, error.message, internal]);
    if (internal) expect(JSON.stringify(answer.body)).not.toMatch(/S3|wal|rows|secret|10\.0\.0\.7/);
  });

  it('keeps the message of an internal error that goes to another process of the cluster, as NATS does', () => {
    // The gateway reading a data node's internal route logs the node's error in full, then answers its own caller with an id.
    const answer = httpErrorOf(new MinkError('Internal', 'a stored batch is corrupt'), ID, { forCluster: true });
    expect([answer.status, answer.body, answer.internal]).toEqual([500, { error: { code: 'Internal', message: 'a stored batch is corrupt' } }, true]);
  });

  it('keeps the redirect of a NotLeader and the retry delay of an Unavailable', () => {
    expect(httpErrorOf(new NotLeaderError('led elsewhere', REDIRECT), ID).body.error.redirect).toEqual(REDIRECT);
    expect(httpErrorOf(new UnavailableError('later', 300), ID).retryAfterMs).toBe(300);
  });
});

describe('sendHttpError', () => {
  function recordingReply(route = '/v1/tables/:name/scan') {
    const sent: { status?: number; headers: Record<string, string>; body?: unknown } = { headers: {} };
    const reply = {
      request: { routeOptions: { url: route } },
      header: (name: string, value: string) => ((sent.headers[name.toLowerCase()] = value), reply),
      hasHeader: (name: string) => name.toLowerCase() in sent.headers,
      status: (status: number) => ((sent.status = status), reply),
      send: (body: unknown) => ((sent.body = body), reply),
    };
    return { reply: reply as unknown as FastifyReply, sent };
  }

  it('logs an internal error in full under a fresh id, and answers that id alone', () => {
    // Proves an operator can go from what a caller reports (the id) to the error and its stack, and the caller learns nothing else.
    const logged: { object: { err: unknown; errorId: string }; message: string }[] = [];
    const logger = { error: (object: { err: unknown; errorId: string }, message: string) => logged.push({ object, message }) } as unknown as Logger;
    const bug = new TypeError("Cannot read properties of undefined (reading 'leader')");
    const first = recordingReply();
    const second = recordingReply();
    sendHttpError(first.reply, bug, logger);
    sendHttpError(second.reply, bug, logger);
    const ids = logged.map((line) => line.object.errorId);
    expect(logged.map((line) => [line.object.err, line.message])).toEqual([
      [bug, 'request failed'],
      [bug, 'request failed'],
    ]);
    expect(new Set(ids).size).toBe(2);
    expect(first.sent).toEqual({ status: 500, headers: { [ERROR_ID_HEADER]: ids[0] }, body: { error: { code: 'Internal', message: internalErrorMessage(ids[0]!) } } });
    expect(second.sent.body).toEqual({ error: { code: 'Internal', message: internalErrorMessage(ids[1]!) } });
  });

  it('answers an internal route (a caller of the cluster) with the message, and logs it too', () => {
    const logged: unknown[] = [];
    const logger = { error: (object: unknown) => logged.push(object) } as unknown as Logger;
    const internal = recordingReply('/internal/v1/scan');
    sendHttpError(internal.reply, new TypeError('x is undefined'), logger);
    expect([internal.sent.status, internal.sent.body, logged.length]).toEqual([500, { error: { code: 'Internal', message: 'x is undefined' } }, 1]);
  });

  it('answers typed outcomes with their headers and logs nothing', () => {
    const logged: unknown[] = [];
    const logger = { error: (object: unknown) => logged.push(object) } as unknown as Logger;
    const unavailable = recordingReply();
    sendHttpError(unavailable.reply, new UnavailableError('later', 1_500), logger);
    expect(unavailable.sent).toEqual({ status: 503, headers: { 'retry-after': '2' }, body: { error: { code: 'Unavailable', message: 'later', retryAfterMs: 1_500 } } });
    const unauthenticated = recordingReply();
    sendHttpError(unauthenticated.reply, new UnauthenticatedError('no token'), logger);
    expect([unauthenticated.sent.status, unauthenticated.sent.headers]).toEqual([401, { 'www-authenticate': 'Bearer realm="mink"' }]);
    expect(logged).toEqual([]);
  });
});
