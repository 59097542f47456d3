import { randomUUID } from 'node:crypto';
import { connect } from 'nats';
import { natsAuthOptions, readNatsCredentials, readServiceConfig } from '@mink/config';
import { S3ObjectStore } from '@mink/s3stream';

/**
 * A leader of the floor write path (write-floor.ts): the least work mink's write contract asks of a bucket
 * leader, and nothing else. Each request is one call's batches for this leader's buckets, already encoded
 * as a leader stores them. Requests that arrive while an object is in flight wait and go out together in
 * the next object, as the WAL writer gathers appends under load; an object is uploaded, then one commit of
 * `commitBytes` is published to JetStream and acked, then every request in the object is answered — an
 * append is acknowledged after its WAL upload and its `CommitWal` (docs/architecture.md §3).
 *
 * Left out, so the path is a floor no design under that contract can go below on the same machine: request
 * checks, offsets, idempotent writers, the linger, applying the commit to a view (a proposer here trusts the
 * publish ack instead of waiting for its own copy of the log), and every other process following the log.
 */
export interface FloorLeaderPorts {
  /** Uploads one object made of `parts`, in order; rejects when the upload failed. */
  put(key: string, parts: Uint8Array[]): Promise<void>;
  /** Publishes one commit and resolves once the stream acked it. */
  commit(): Promise<void>;
}

/** One request of a call: its bytes, and how to answer it (an empty reply for done, else the error's text). */
export interface FloorRequest {
  data: Uint8Array;
  answer(error: string | null): void;
}

export class FloorLeader {
  private queue: FloorRequest[] = [];
  private writing = false;
  private sequence = 0;

  constructor(
    private readonly keyPrefix: string,
    private readonly ports: FloorLeaderPorts,
  ) {}

  /** Objects written so far (uploaded and committed, or failed). */
  get objectsWritten(): number {
    return this.sequence;
  }

  handle(request: FloorRequest): void {
    this.queue.push(request);
    if (!this.writing) void this.writeQueued();
  }

  /** Writes everything queued as one object, then whatever arrived meanwhile, until the queue is empty. Never rejects. */
  private async writeQueued(): Promise<void> {
    this.writing = true;
    while (this.queue.length > 0) {
      const requests = this.queue;
      this.queue = [];
      const key = `${this.keyPrefix}${String(this.sequence++).padStart(FLOOR_SEQUENCE_DIGITS, '0')}`;
      let failure: string | null = null;
      try {
        await this.ports.put(key, requests.map((request) => request.data));
        await this.ports.commit();
      } catch (error) {
        failure = `object ${key}: ${error instanceof Error ? error.message : String(error)}`;
      }
      for (const request of requests) request.answer(failure);
    }
    this.writing = false;
  }
}

/** Digits of an object's sequence in its key, so one leader's keys sort in write order. */
const FLOOR_SEQUENCE_DIGITS = 8;

/** The line a leader process prints once it answers requests. */
export const FLOOR_LEADER_READY_LINE = 'ready';

/**
 * Usage: `node floor-leader.js <subject> <commit subject> <key prefix> <commit bytes>`, with the S3 and NATS
 * settings of a mink service in the environment (`MINK_NATS_URL`, `MINK_S3_*`), so the object store is built
 * as a data node builds its own. Prints `ready` once subscribed; exits when its stdin closes (the bench ended,
 * however it ended) or on SIGTERM.
 */
async function main(): Promise<void> {
  const [subject, commitSubject, keyPrefix, commitBytesText] = process.argv.slice(2);
  const commitBytes = Number(commitBytesText);
  if (!subject || !commitSubject || !keyPrefix || !Number.isSafeInteger(commitBytes) || commitBytes < 1) {
    process.stderr.write('usage: floor-leader <subject> <commit subject> <key prefix> <commit bytes>\n');
    process.exit(2);
  }
  const config = readServiceConfig(process.env);
  const store = S3ObjectStore.fromConfig(config);
  const connection = await connect({ servers: config.natsServers, name: 'mink-bench-floor-leader', ...natsAuthOptions(readNatsCredentials(process.env)) });
  const jetStream = connection.jetstream();
  const commit = new Uint8Array(commitBytes).fill(0x7b);
  const leader = new FloorLeader(keyPrefix, {
    put: (key, parts) => store.put(key, parts),
    // With a message id, as a CommitWal proposal is published (the stream de-duplicates retries by it).
    commit: async () => {
      await jetStream.publish(commitSubject, commit, { msgID: randomUUID() });
    },
  });
  const done = new Uint8Array(0);
  connection.subscribe(subject, {
    callback: (error, message) => {
      if (error) return;
      leader.handle({ data: message.data, answer: (failure) => message.respond(failure === null ? done : new TextEncoder().encode(failure)) });
    },
  });
  await connection.flush();
  process.stdout.write(`${FLOOR_LEADER_READY_LINE}\n`);
  process.stdin.on('close', () => process.exit(0));
  process.stdin.resume();
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`floor-leader: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
