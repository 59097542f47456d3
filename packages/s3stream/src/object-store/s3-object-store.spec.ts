import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, startS3Server, type S3ServerHandle } from '@mink/devcluster';
import { InvalidArgumentError, MinkError, NotFoundError, UnavailableError } from '@mink/protocol';
import { OBJECT_PUT_BYTES_MAX } from './object-store';
import { describeObjectStoreContract } from './object-store.contract';
import { S3ObjectStore, type S3ObjectStoreOptions } from './s3-object-store';

const BUCKET = 'mink-object-store-test';
const HOST = '127.0.0.1';
/** Short waits between attempts keep the retry tests fast while still going through the backoff path. */
const TEST_BACKOFF = { initialMs: 5, maxMs: 20 };
const SERVER_START_TIMEOUT_MS = 20_000;

/** One request as the scripted server saw it, body included. */
interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

type Answer = (request: RecordedRequest, response: ServerResponse) => void | Promise<void>;

/** A tiny HTTP server that answers as each test scripts it and records what it was sent. */
interface ScriptedServer {
  endpoint: string;
  requests: RecordedRequest[];
  /** The most requests it was handling at the same moment. */
  inFlightMax(): number;
  close(): Promise<void>;
}

async function startScriptedServer(answer: Answer): Promise<ScriptedServer> {
  const requests: RecordedRequest[] = [];
  let inFlight = 0;
  let inFlightMax = 0;
  const server: Server = createServer((incoming, response) => {
    inFlight++;
    inFlightMax = Math.max(inFlightMax, inFlight);
    response.on('close', () => inFlight--);
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const recorded = { method: incoming.method ?? '', url: incoming.url ?? '', headers: incoming.headers, body: Buffer.concat(chunks) };
      requests.push(recorded);
      Promise.resolve(answer(recorded, response)).catch((error: Error) => {
        response.writeHead(599);
        response.end(error.message);
      });
    });
  });
  const port = await freePort(HOST);
  await new Promise<void>((resolve) => server.listen(port, HOST, resolve));
  return {
    endpoint: `http://${HOST}:${port}`,
    requests,
    inFlightMax: () => inFlightMax,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function answerS3Error(response: ServerResponse, status: number, code: string, message: string): void {
  response.writeHead(status, { 'content-type': 'application/xml' });
  response.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`);
}

/** Forwards a recorded request unchanged (Host header included, so its signature stays valid) to `port`. */
function proxy(port: number, request: RecordedRequest, response: ServerResponse): Promise<void> {
  return new Promise((resolve, reject) => {
    const upstream = httpRequest({ host: HOST, port, method: request.method, path: request.url, headers: request.headers }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
      answer.on('end', resolve);
    });
    upstream.on('error', reject);
    upstream.end(request.body);
  });
}

function storeOptions(endpoint: string, overrides: Partial<S3ObjectStoreOptions> = {}): S3ObjectStoreOptions {
  return {
    endpoint,
    bucket: BUCKET,
    region: 'us-east-1',
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    backoff: TEST_BACKOFF,
    ...overrides,
  };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail, but it succeeded');
}

function keysInDeleteBody(body: Buffer): number {
  return body.toString('utf8').split('<Key>').length - 1;
}

describe("S3ObjectStore and the AWS SDK's notice about Node.js 22", () => {
  const VARIABLE = 'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED';
  const options = { endpoint: 'http://127.0.0.1:9', bucket: BUCKET, region: 'us-east-1', accessKeyId: 'a', secretAccessKey: 'b' };
  let saved: string | undefined;
  beforeEach(() => {
    saved = process.env[VARIABLE];
    delete process.env[VARIABLE];
  });
  afterEach(() => {
    if (saved === undefined) delete process.env[VARIABLE];
    else process.env[VARIABLE] = saved;
    jest.restoreAllMocks();
  });

  /** The warnings emitted while a store is made by a fresh copy of this module and the SDK (whose "emitted once" flag is per module). */
  function warningsOfFirstStore(): string[] {
    const emitted = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    jest.isolateModules(() => {
      const fresh = require('./s3-object-store') as typeof import('./s3-object-store');
      new fresh.S3ObjectStore(options);
    });
    return emitted.mock.calls.map((call) => String(call[0]));
  }

  it('turns the notice off before it makes its client (nine plain-text lines in a JSON log otherwise)', () => {
    expect(warningsOfFirstStore()).toEqual([]);
    expect(process.env[VARIABLE]).toBe('true');
  });

  it('leaves the variable as it is when it is set', () => {
    process.env[VARIABLE] = 'false';
    expect(warningsOfFirstStore().some((warning) => warning.includes('node >=22'))).toBe(process.version.startsWith('v20.'));
    expect(process.env[VARIABLE]).toBe('false');
  });
});

describe('S3ObjectStore', () => {
  let dataDir: string;
  let s3: S3ServerHandle;
  const stores: S3ObjectStore[] = [];
  let contractStores = 0;

  function track(store: S3ObjectStore): S3ObjectStore {
    stores.push(store);
    return store;
  }

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mink-object-store-'));
    s3 = await startS3Server({ dataDir, bucket: BUCKET, logFile: join(dataDir, 's3rver.log') });
  }, SERVER_START_TIMEOUT_MS);

  afterAll(async () => {
    for (const store of stores) store.close();
    await s3?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  describe('against s3rver', () => {
    // Each contract test gets its own key prefix, which both isolates the tests and exercises the prefix option.
    describeObjectStoreContract('S3ObjectStore on s3rver', () =>
      track(new S3ObjectStore(storeOptions(s3.endpoint, { prefix: `contract-${++contractStores}/` }))),
    );

    it('keeps stores with different key prefixes apart and hides the prefix from their callers', async () => {
      // Proves the prefix is prepended on every operation and stripped from listings, so two stores on one bucket never see each other's keys.
      const left = track(new S3ObjectStore(storeOptions(s3.endpoint, { prefix: 'tenants/left/' })));
      const right = track(new S3ObjectStore(storeOptions(s3.endpoint, { prefix: 'tenants/right/' })));
      const whole = track(new S3ObjectStore(storeOptions(s3.endpoint)));

      await left.put('wal/1', Uint8Array.from([1]));
      await right.put('wal/1', Uint8Array.from([2, 2]));

      expect(await left.get('wal/1')).toEqual(Uint8Array.from([1]));
      expect(await right.get('wal/1')).toEqual(Uint8Array.from([2, 2]));
      expect(await left.list('')).toEqual([{ key: 'wal/1', size: 1, lastModifiedMs: expect.any(Number) }]);
      expect(await whole.list('tenants/')).toEqual([
        { key: 'tenants/left/wal/1', size: 1, lastModifiedMs: expect.any(Number) },
        { key: 'tenants/right/wal/1', size: 2, lastModifiedMs: expect.any(Number) },
      ]);

      await left.delete(['wal/1']);
      expect(await rejection(left.get('wal/1'))).toBeInstanceOf(NotFoundError);
      expect(await right.get('wal/1')).toEqual(Uint8Array.from([2, 2]));
    });

    it('creates a missing bucket with ensureBucket and accepts one that exists', async () => {
      // Proves `mink up` can call ensureBucket on every start: the first call creates the bucket, later ones are no-ops.
      const fresh = track(new S3ObjectStore(storeOptions(s3.endpoint, { bucket: 'mink-fresh-bucket' })));
      const beforeCreation = await rejection(fresh.put('k', Uint8Array.from([1])));
      expect((beforeCreation as MinkError).code).toBe('Internal');
      expect((beforeCreation as MinkError).message).toContain('NoSuchBucket');
      await fresh.ensureBucket();
      await fresh.ensureBucket();
      await fresh.put('k', Uint8Array.from([3]));
      expect(await fresh.get('k')).toEqual(Uint8Array.from([3]));
    });

    it('builds a working store from the service configuration', async () => {
      // Proves fromConfig maps the MINK_S3_* settings onto the client: a round trip through it reaches the same bucket.
      const configured = track(
        S3ObjectStore.fromConfig(
          {
            s3Endpoint: s3.endpoint,
            s3Bucket: BUCKET,
            s3Region: 'us-east-1',
            s3AccessKeyId: 'S3RVER',
            s3SecretAccessKey: 'S3RVER',
          } as Parameters<typeof S3ObjectStore.fromConfig>[0],
          { prefix: 'configured/' },
        ),
      );
      await configured.put('k', Uint8Array.from([4, 5]));
      const whole = track(new S3ObjectStore(storeOptions(s3.endpoint)));
      expect(await whole.get('configured/k')).toEqual(Uint8Array.from([4, 5]));
    });
  });

  describe('retries and bounds', () => {
    let scripted: ScriptedServer | undefined;

    afterEach(async () => {
      await scripted?.close();
      scripted = undefined;
    });

    it('retries 503 SlowDown and succeeds on the third attempt, storing the body once', async () => {
      // Proves throttling answers are retried with backoff and the request that finally passes carries the intact body.
      let answered = 0;
      scripted = await startScriptedServer((request, response) => {
        answered++;
        if (answered <= 2) return answerS3Error(response, 503, 'SlowDown', 'Please reduce your request rate.');
        return proxy(s3.port, request, response);
      });
      const flaky = track(new S3ObjectStore(storeOptions(scripted.endpoint, { prefix: 'retried/', maxAttempts: 3 })));
      const body = Uint8Array.from({ length: 4_096 }, (_, index) => (index * 7) % 256);

      await flaky.put('wal/1/1/1', body);

      expect(scripted.requests.map((request) => request.method)).toEqual(['PUT', 'PUT', 'PUT']);
      expect(scripted.requests.every((request) => request.body.equals(Buffer.from(body)))).toBe(true);
      const direct = track(new S3ObjectStore(storeOptions(s3.endpoint, { prefix: 'retried/' })));
      expect(await direct.get('wal/1/1/1')).toEqual(body);
      // The two attempts made again are counted (mink_object_store_retries_total), the direct store's none.
      expect([...flaky.retries]).toEqual([['PutObject', 2]]);
      expect(direct.retries.size).toBe(0);
    });

    it('retries putFile with a fresh read of the file on every attempt', async () => {
      // Proves a retried file upload sends the whole file again (a used-up stream would send nothing) and stores it once intact.
      let answered = 0;
      scripted = await startScriptedServer((request, response) => {
        answered++;
        if (answered <= 2) return answerS3Error(response, 503, 'SlowDown', 'Please reduce your request rate.');
        return proxy(s3.port, request, response);
      });
      const flaky = track(new S3ObjectStore(storeOptions(scripted.endpoint, { prefix: 'retried-file/', maxAttempts: 3 })));
      const body = Buffer.from(Uint8Array.from({ length: 300_000 }, (_, index) => (index * 13) % 256));
      const source = join(dataDir, 'retried-upload');
      await writeFile(source, body);

      await flaky.putFile('kv/1', source);

      expect(scripted.requests.map((request) => request.method)).toEqual(['PUT', 'PUT', 'PUT']);
      expect(scripted.requests.map((request) => request.headers['content-length'])).toEqual(['300000', '300000', '300000']);
      expect(scripted.requests.every((request) => request.body.equals(body))).toBe(true);
      const direct = track(new S3ObjectStore(storeOptions(s3.endpoint, { prefix: 'retried-file/' })));
      expect(Buffer.compare(await direct.get('kv/1'), body)).toBe(0);
    });

    it('retries getToFile after a body cut off midway and leaves only the complete object in the file', async () => {
      // Proves a download that breaks is retried and the file is truncated for the new attempt, not appended to.
      const direct = track(new S3ObjectStore(storeOptions(s3.endpoint, { prefix: 'retried-download/' })));
      const body = Buffer.from(Uint8Array.from({ length: 200_000 }, (_, index) => (index * 7) % 256));
      await direct.put('kv/1', body);
      let answered = 0;
      scripted = await startScriptedServer((request, response) => {
        answered++;
        if (answered > 1) return proxy(s3.port, request, response);
        response.writeHead(200, { 'content-length': String(body.length), 'content-type': 'application/octet-stream' });
        response.write(body.subarray(0, 120_000), () => response.socket?.destroy());
      });
      const flaky = track(new S3ObjectStore(storeOptions(scripted.endpoint, { prefix: 'retried-download/', maxAttempts: 3 })));
      const target = join(dataDir, 'retried-download');

      expect(await flaky.getToFile('kv/1', target)).toBe(body.length);

      expect(scripted.requests.map((request) => request.method)).toEqual(['GET', 'GET']);
      expect(Buffer.compare(await readFile(target), body)).toBe(0);
    });

    it('refuses putFile of a file above 5 GiB without sending a request', async () => {
      // Proves the single-PutObject limit is enforced on this side, so S3 never sees (or half-receives) such an upload.
      scripted = await startScriptedServer((_request, response) => {
        response.writeHead(200, { etag: '"0"' });
        response.end();
      });
      const store = track(new S3ObjectStore(storeOptions(scripted.endpoint)));
      const huge = join(dataDir, 'huge-upload');
      await writeFile(huge, new Uint8Array(0));
      await truncate(huge, OBJECT_PUT_BYTES_MAX + 1);

      expect(await rejection(store.putFile('huge', huge))).toBeInstanceOf(InvalidArgumentError);
      expect(scripted.requests).toEqual([]);
      rmSync(huge);
    });

    it('retries a 500 on a ranged GET and returns the requested bytes', async () => {
      // Proves reads go through the same retry loop and the retried request still asks for the explicit range.
      const direct = track(new S3ObjectStore(storeOptions(s3.endpoint, { prefix: 'retried-get/' })));
      const body = Uint8Array.from({ length: 100 }, (_, index) => index);
      await direct.put('stream', body);
      let answered = 0;
      scripted = await startScriptedServer((request, response) => {
        answered++;
        if (answered === 1) return answerS3Error(response, 500, 'InternalError', 'We encountered an internal error.');
        return proxy(s3.port, request, response);
      });
      const flaky = track(new S3ObjectStore(storeOptions(scripted.endpoint, { prefix: 'retried-get/', maxAttempts: 3 })));

      expect(await flaky.get('stream', { start: 10, endExclusive: 20 })).toEqual(body.slice(10, 20));
      expect(scripted.requests.map((request) => request.headers.range)).toEqual(['bytes=10-19', 'bytes=10-19']);
      expect([...flaky.retries]).toEqual([['GetObject', 1]]);
    });

    it('does not retry 403, 400 or 404 answers', async () => {
      // Proves refusals fail after one request: 403 and 400 as Internal errors naming the S3 code, 404 as NotFound.
      scripted = await startScriptedServer((request, response) => {
        if (request.url.includes('forbidden')) return answerS3Error(response, 403, 'AccessDenied', 'Access Denied');
        if (request.url.includes('malformed')) return answerS3Error(response, 400, 'InvalidRequest', 'Bad request');
        return answerS3Error(response, 404, 'NoSuchKey', 'The specified key does not exist.');
      });
      const store = track(new S3ObjectStore(storeOptions(scripted.endpoint, { maxAttempts: 4 })));

      const forbidden = await rejection(store.put('forbidden', Uint8Array.from([1])));
      const malformed = await rejection(store.get('malformed'));
      const missing = await rejection(store.get('missing'));

      expect(forbidden).toBeInstanceOf(MinkError);
      expect(forbidden).not.toBeInstanceOf(UnavailableError);
      expect((forbidden as MinkError).code).toBe('Internal');
      expect((forbidden as MinkError).message).toContain('403 AccessDenied');
      expect((malformed as MinkError).code).toBe('Internal');
      expect((malformed as MinkError).message).toContain('400 InvalidRequest');
      expect(missing).toBeInstanceOf(NotFoundError);
      expect(scripted.requests.map((request) => request.method)).toEqual(['PUT', 'GET', 'GET']);
    });

    it('gives up on a refused connection after the configured attempts with UnavailableError', async () => {
      // Proves network failures are retried up to the bound and then surface as the typed Unavailable with the cause.
      const closedPort = await freePort(HOST);
      const store = track(new S3ObjectStore(storeOptions(`http://${HOST}:${closedPort}`, { maxAttempts: 3 })));

      const error = await rejection(store.get('anything'));

      expect(error).toBeInstanceOf(UnavailableError);
      expect((error as UnavailableError).message).toContain('after 3 attempts');
      expect((error as UnavailableError).message).toContain('ECONNREFUSED');
    });

    it('never has more requests in flight than maxConcurrency', async () => {
      // Proves the semaphore bounds requests on the wire: 24 parallel puts reach the server at most 3 at a time, and do reach 3.
      scripted = await startScriptedServer(async (_request, response) => {
        await sleep(25);
        response.writeHead(200, { etag: '"0"' });
        response.end();
      });
      const store = track(new S3ObjectStore(storeOptions(scripted.endpoint, { maxConcurrency: 3 })));

      await Promise.all(Array.from({ length: 24 }, (_, index) => store.put(`parallel/${index}`, Uint8Array.from([index]))));

      expect(scripted.requests.length).toBe(24);
      expect(scripted.inFlightMax()).toBe(3);
    });

    it('deletes in DeleteObjects requests of at most 1000 keys and resends a chunk whose keys failed transiently', async () => {
      // Proves 2500 keys go out as 1000 + 1000 + 500, and a per-key InternalError in a 200 answer is retried like a 500.
      let failedOnce = false;
      scripted = await startScriptedServer((request, response) => {
        response.writeHead(200, { 'content-type': 'application/xml' });
        if (!failedOnce && keysInDeleteBody(request.body) === 500) {
          failedOnce = true;
          response.end('<DeleteResult><Error><Key>k</Key><Code>InternalError</Code><Message>try again</Message></Error></DeleteResult>');
          return;
        }
        response.end('<DeleteResult></DeleteResult>');
      });
      const store = track(new S3ObjectStore(storeOptions(scripted.endpoint, { maxConcurrency: 1 })));

      await store.delete(Array.from({ length: 2_500 }, (_, index) => `delete/${index}`));

      expect(scripted.requests.every((request) => request.method === 'POST' && request.url.includes('delete'))).toBe(true);
      expect(scripted.requests.map((request) => keysInDeleteBody(request.body))).toEqual([1_000, 1_000, 500, 500]);
    });

    it('does not resend a DeleteObjects chunk whose keys were refused', async () => {
      // Proves per-key AccessDenied in a 200 answer is a refusal: one request, an Internal error naming the code.
      scripted = await startScriptedServer((_request, response) => {
        response.writeHead(200, { 'content-type': 'application/xml' });
        response.end('<DeleteResult><Error><Key>k</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error></DeleteResult>');
      });
      const store = track(new S3ObjectStore(storeOptions(scripted.endpoint)));

      const error = await rejection(store.delete(['k']));

      expect((error as MinkError).code).toBe('Internal');
      expect((error as MinkError).message).toContain('AccessDenied');
      expect(scripted.requests.length).toBe(1);
    });
  });
});
