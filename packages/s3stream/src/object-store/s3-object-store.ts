import { createReadStream, createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CreateBucketCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { LIMITS, OBJECT_STORE_BACKOFF, backoffDelayMs, type BackoffPolicy, type ServiceConfig } from '@mink/config';
import { InvalidArgumentError, MinkError, NotFoundError, UnavailableError } from '@mink/protocol';
import { assertValidByteRange, httpRangeHeader } from './byte-range';
import { sizeOfFileToPut } from './file-bodies';
import { assertValidKey, compareKeys } from './keys';
import { lengthOfBody, partsOfBody, type ByteRange, type ListedObject, type ObjectBody, type ObjectStore } from './object-store';
import { classifyS3Error, describeS3Error } from './s3-errors';
import { Semaphore } from './semaphore';

export interface S3ObjectStoreOptions {
  /** Base URL of the S3-compatible service, e.g. `http://127.0.0.1:9000`; addressed path-style. */
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /**
   * Prepended to every key, so several clusters or tests can share one bucket. It is used verbatim (include
   * the trailing `/` if one is wanted) and never shows in the keys callers pass or get back. Default ''.
   */
  prefix?: string;
  /** Requests in flight at once; default `LIMITS.objectStoreConcurrencyMax`. */
  maxConcurrency?: number;
  /** Attempts of one request, the first included; default `LIMITS.objectStoreAttemptsMax`. */
  maxAttempts?: number;
  /** Waits between attempts; default from `LIMITS.objectStoreBackoffInitialMs` and `objectStoreBackoffMaxMs`. */
  backoff?: BackoffPolicy;
}

/** The options `fromConfig` leaves to the caller, since the service configuration does not carry them. */
export type S3ObjectStoreTuning = Pick<S3ObjectStoreOptions, 'prefix' | 'maxConcurrency' | 'maxAttempts' | 'backoff'>;

/** Raised inside one attempt when DeleteObjects answers 200 but names keys it could not delete. */
class DeleteObjectsFailure extends Error {
  constructor(name: string, message: string) {
    super(message);
    this.name = name;
  }
}

/** Raised inside one attempt when a GET body ends before the length the response announced. */
class IncompleteBodyError extends Error {
  // The code makes the classification treat it like the broken connection it almost always is.
  readonly code = 'ECONNRESET';
  constructor(message: string) {
    super(message);
    this.name = 'IncompleteBody';
  }
}

/**
 * A response body of a known length, copied chunk by chunk into one array of that length as it arrives: the
 * SDK's `transformToByteArray` keeps every chunk and then copies them into a zero-filled array, two passes
 * over fresh memory where one will do (a large share of a cold scan's CPU).
 */
async function readSizedBody(body: Readable, length: number): Promise<Uint8Array> {
  // Not zero-filled: every byte is written below before the array is returned (checked at the end).
  const bytes = Buffer.allocUnsafeSlow(length);
  let received = 0;
  for await (const chunk of body as AsyncIterable<Uint8Array>) {
    if (received + chunk.byteLength > length) {
      body.destroy();
      throw new IncompleteBodyError(`the body went on past the ${length} bytes its Content-Length announced`);
    }
    bytes.set(chunk, received);
    received += chunk.byteLength;
  }
  if (received !== length) throw new IncompleteBodyError(`the body ended after ${received} of ${length} bytes`);
  return bytes;
}

/**
 * `ObjectStore` on S3 or an S3-compatible server, the only module of s3stream that touches the AWS SDK.
 *
 * Every request runs in a slot of a bounded semaphore (at most `maxConcurrency` in flight, waiting requests in
 * arrival order) and is retried with jittered exponential backoff when the failure is transient: 5xx,
 * throttling, timeouts and broken or refused connections. Refusals (other 4xx) are not retried. After the
 * last attempt a transient failure becomes `UnavailableError`; a missing key becomes `NotFoundError`, a range
 * starting beyond the object `InvalidArgumentError`, and any other refusal a `MinkError` with code `Internal`.
 * The SDK's own retries are switched off so that this is the one retry loop and its bounds hold.
 *
 * `putFile` and `getToFile` stream between the file and the connection, so their memory does not grow with
 * the object; an attempt holds its slot for the whole transfer, and every retry starts the transfer over.
 */
export class S3ObjectStore implements ObjectStore {
  readonly bucket: string;
  readonly prefix: string;
  private readonly client: S3Client;
  private readonly semaphore: Semaphore;
  private readonly attemptsMax: number;
  private readonly backoff: BackoffPolicy;
  /**
   * Attempts of each operation (PutObject, GetObject, …) that failed transiently and were made again, since the
   * store was made: a slow request and a retried one look alike from outside (`mink_object_store_retries_total`).
   */
  readonly retries = new Map<string, number>();

  /** A store on the service's configured endpoint, bucket and credentials (`MINK_S3_*`). */
  static fromConfig(config: ServiceConfig, tuning: S3ObjectStoreTuning = {}): S3ObjectStore {
    return new S3ObjectStore({
      endpoint: config.s3Endpoint,
      bucket: config.s3Bucket,
      region: config.s3Region,
      accessKeyId: config.s3AccessKeyId,
      secretAccessKey: config.s3SecretAccessKey,
      ...tuning,
    });
  }

  constructor(options: S3ObjectStoreOptions) {
    const concurrencyMax = options.maxConcurrency ?? LIMITS.objectStoreConcurrencyMax;
    const attemptsMax = options.maxAttempts ?? LIMITS.objectStoreAttemptsMax;
    if (!Number.isSafeInteger(attemptsMax) || attemptsMax < 1) throw new Error(`maxAttempts must be at least 1, got ${attemptsMax}`);
    this.bucket = options.bucket;
    this.prefix = options.prefix ?? '';
    this.attemptsMax = attemptsMax;
    this.backoff = options.backoff ?? OBJECT_STORE_BACKOFF;
    this.semaphore = new Semaphore(concurrencyMax, LIMITS.objectStoreQueuedRequestsMax);
    // The SDK warns on standard error, in nine lines of plain text, that its releases of 2027 need Node.js 22,
    // when the first client is made: among a service's JSON log lines, a CLI command's one-line error or the
    // bench's report. That is for the project to act on (docs/limits.md). This is the one place mink makes an
    // S3 client, so the one place that turns the notice off; set explicitly, the variable stays.
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
    this.client = new S3Client({
      endpoint: options.endpoint,
      region: options.region,
      credentials: { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey },
      // S3-compatible servers (s3rver, MinIO) serve buckets under paths, not under virtual host names.
      forcePathStyle: true,
      // With the SDK's default checksums, s3rver stores streamed bodies with their aws-chunked framing, i.e.
      // corrupt (TOOLCHAIN), and would fail the response checks it cannot answer.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 1,
      // The handler chain of each command class is resolved once instead of on every send (the SDK's own
      // option; it ignores middleware added to a single command, which mink never adds). A send with options
      // of its own (putFile's abort signal) resolves its chain afresh and empties the cache, which the next
      // sends fill again. Resolving it was about a tenth of the SDK's CPU per PutObject here, and a PUT
      // through the SDK costs a data node 1.8-2 ms of CPU against ~0.7 ms for the same request over plain
      // node:http.
      cacheMiddleware: true,
      requestHandler: {
        connectionTimeout: LIMITS.objectStoreConnectTimeoutMs,
        requestTimeout: LIMITS.objectStoreResponseTimeoutMs,
        throwOnRequestTimeout: true,
        socketTimeout: LIMITS.objectStoreSocketIdleTimeoutMs,
        // As many sockets as slots, so a request that holds a slot never waits for a socket as well.
        httpAgent: { keepAlive: true, maxSockets: concurrencyMax },
      },
    });
  }

  /**
   * The body goes out as a stream of its parts: they are written to the connection as they are, never joined
   * (a WAL or stream object is made of many batches), and the request is signed with an unsigned payload
   * instead of a SHA-256 of the body, which the SDK computes only for a body given as one array. The
   * connection to S3 (TLS in production) guards the bytes in transit; mink does not ask S3 to checksum them
   * (see `requestChecksumCalculation` above).
   */
  async put(key: string, body: ObjectBody): Promise<void> {
    assertValidKey(key);
    const parts = partsOfBody(body);
    const length = lengthOfBody(body);
    await this.send('PutObject', key, () =>
      this.client.send(
        // A stream is used up by the attempt that sends it, so every attempt streams the parts afresh.
        new PutObjectCommand({ Bucket: this.bucket, Key: this.prefix + key, Body: Readable.from(parts), ContentLength: length }),
      ),
    );
  }

  async putFile(key: string, path: string): Promise<void> {
    assertValidKey(key);
    const bytes = await sizeOfFileToPut(path);
    await this.send('PutObject', key, async () => {
      // A stream is used up by the attempt that sends it, so every attempt reads the file afresh from its start.
      const body = createReadStream(path);
      // The SDK pipes the body into the request without watching it for errors; a failed read aborts the request
      // instead of leaving it to wait for bytes that never come, and is what the caller sees.
      const abort = new AbortController();
      let readError: Error | undefined;
      body.once('error', (error) => {
        readError = error;
        abort.abort();
      });
      try {
        await this.client.send(
          new PutObjectCommand({ Bucket: this.bucket, Key: this.prefix + key, Body: body, ContentLength: bytes }),
          // The client's request timeout runs until the response headers, which for an upload means until the
          // whole body is sent: a fixed bound would fail large files on slow links. Without it a stalled upload
          // still fails through the socket idle timeout (LIMITS.objectStoreSocketIdleTimeoutMs).
          { abortSignal: abort.signal, requestTimeout: 0 },
        );
      } catch (error) {
        throw readError ?? error;
      } finally {
        // Closes the file when the request ended before reading all of it (a refusal, a broken connection).
        body.destroy();
      }
    });
  }

  async getToFile(key: string, path: string): Promise<number> {
    assertValidKey(key);
    return this.send('GetObject', key, async () => {
      const response = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + key }));
      // Opened only once the object answered, and opened anew with truncation on every attempt, so the bytes of
      // an attempt that broke midway never stay in front of those of the next one.
      const file = createWriteStream(path);
      // Writing the body belongs to the attempt, as in `get`; the pipeline waits while the disk is slower than
      // the network, so only a few chunks are ever in memory.
      await pipeline((response.Body as Readable | undefined) ?? Readable.from([]), file);
      if (response.ContentLength !== undefined && file.bytesWritten !== response.ContentLength) {
        throw new IncompleteBodyError(`the body ended after ${file.bytesWritten} of ${response.ContentLength} bytes`);
      }
      return file.bytesWritten;
    });
  }

  async get(key: string, range?: ByteRange): Promise<Uint8Array> {
    assertValidKey(key);
    if (range !== undefined) assertValidByteRange(range);
    return this.send('GetObject', key, async () => {
      const response = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + key, Range: range && httpRangeHeader(range) }),
      );
      // Reading the body belongs to the attempt: a connection that breaks mid-body is retried like one that
      // broke before the headers.
      if (response.Body === undefined) return new Uint8Array(0);
      if (response.ContentLength === undefined) return response.Body.transformToByteArray();
      return readSizedBody(response.Body as Readable, response.ContentLength);
    });
  }

  async delete(keys: string[]): Promise<void> {
    keys.forEach(assertValidKey);
    const chunks: string[][] = [];
    for (let index = 0; index < keys.length; index += LIMITS.objectStoreDeleteKeysPerRequestMax) {
      chunks.push(keys.slice(index, index + LIMITS.objectStoreDeleteKeysPerRequestMax));
    }
    await Promise.all(chunks.map((chunk) => this.deleteChunk(chunk)));
  }

  async list(prefix: string): Promise<ListedObject[]> {
    const listed: ListedObject[] = [];
    let continuationToken: string | undefined;
    do {
      const token = continuationToken;
      const page = await this.send('ListObjectsV2', prefix, () =>
        this.client.send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: this.prefix + prefix,
            MaxKeys: LIMITS.objectStoreListKeysPerPageMax,
            ContinuationToken: token,
          }),
        ),
      );
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined) continue;
        // Every S3 server sends LastModified; without it an object could not be told young from old.
        if (object.LastModified === undefined) throw new Error(`listing '${prefix}' gave no LastModified for '${object.Key}'`);
        listed.push({ key: object.Key.slice(this.prefix.length), size: object.Size ?? 0, lastModifiedMs: object.LastModified.getTime() });
      }
      if (listed.length > LIMITS.objectStoreListedKeysMax) {
        throw new Error(`listing '${prefix}' passed ${LIMITS.objectStoreListedKeysMax} keys; list a narrower prefix`);
      }
      if (page.IsTruncated && !page.NextContinuationToken) {
        throw new Error(`listing '${prefix}' was cut short without a continuation token`);
      }
      continuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (continuationToken !== undefined);
    // S3 already lists in this order; sorting keeps the contract on servers that do not.
    return listed.sort((left, right) => compareKeys(left.key, right.key));
  }

  /** Creates the bucket unless it exists already; for tests and `mink up`, never on a serving path. */
  async ensureBucket(): Promise<void> {
    try {
      await this.send('HeadBucket', this.bucket, () => this.client.send(new HeadBucketCommand({ Bucket: this.bucket })));
      return;
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
    }
    await this.send('CreateBucket', this.bucket, async () => {
      try {
        await this.client.send(new CreateBucketCommand({ Bucket: this.bucket }));
      } catch (error) {
        // Another process created it between our HEAD and our create: the outcome we wanted.
        if ((error as { name?: unknown }).name !== 'BucketAlreadyOwnedByYou') throw error;
      }
    });
  }

  /** Closes the idle connections; requests still running fail. */
  close(): void {
    this.client.destroy();
  }

  private async deleteChunk(keys: string[]): Promise<void> {
    await this.send('DeleteObjects', `${keys.length} keys from '${keys[0]}'`, async () => {
      const response = await this.client.send(
        new DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: { Objects: keys.map((key) => ({ Key: this.prefix + key })), Quiet: true },
        }),
      );
      const first = response.Errors?.[0];
      if (first !== undefined) {
        // Deleting is idempotent, so the whole chunk is simply sent again when the failure is transient.
        throw new DeleteObjectsFailure(
          first.Code ?? 'DeleteFailed',
          `${response.Errors!.length} keys were not deleted, first '${first.Key}': ${first.Message ?? ''}`,
        );
      }
    });
  }

  /** Runs one request with the slot, retry and error translation rules described on the class. */
  private async send<T>(operation: string, subject: string, request: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.semaphore.run(request);
      } catch (error) {
        if (error instanceof MinkError) throw error;
        const kind = classifyS3Error(error);
        if (kind === 'not-found') throw new NotFoundError(`${operation}: '${subject}' does not exist in bucket '${this.bucket}'`);
        if (kind === 'invalid-range') throw new InvalidArgumentError(`${operation} of '${subject}': ${describeS3Error(error)}`);
        if (kind === 'permanent') {
          // An answer from the server (it has a status or names an S3 error) is a refusal to report; anything
          // else is a bug on this side and keeps its own stack.
          if (!isServerAnswer(error)) throw error;
          throw new MinkError('Internal', `S3 refused ${operation} of '${subject}': ${describeS3Error(error)}`);
        }
        if (attempt >= this.attemptsMax) {
          throw new UnavailableError(`S3 ${operation} of '${subject}' failed after ${attempt} attempts: ${describeS3Error(error)}`);
        }
        this.retries.set(operation, (this.retries.get(operation) ?? 0) + 1);
        // The slot is free during the wait: the bound is on requests on the wire, not on requests waiting.
        await sleep(backoffDelayMs(attempt, this.backoff, Math.random));
      }
    }
  }
}

function isServerAnswer(error: unknown): boolean {
  if (error instanceof DeleteObjectsFailure) return true;
  const status = (error as { $metadata?: { httpStatusCode?: unknown } } | undefined)?.$metadata?.httpStatusCode;
  return typeof status === 'number';
}
