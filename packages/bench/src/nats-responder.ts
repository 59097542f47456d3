import { randomBytes } from 'node:crypto';
import { connect } from 'nats';
import { BENCH_BASELINES } from './bench-limits';

/**
 * The responder of the raw NATS request/reply baseline, run by `pnpm bench` as a child process so that,
 * like a data node answering a lookup, it answers from another process through the same nats-server, and
 * does nothing else: the baseline is the cost of carrying a request and its reply.
 *
 * Usage: `node nats-responder.js <nats url> <subject>`. The first four bytes of a request (big-endian)
 * give the size of the reply it asks for; the reply is that many bytes of a body kept per size. Prints
 * `ready` once subscribed; exits when its stdin closes (the bench ended, however it ended) or on SIGTERM.
 */

/** The line the responder prints once it answers requests. */
export const RESPONDER_READY_LINE = 'ready';

/** Bytes at the start of a request that hold the size of the reply asked for. */
export const REPLY_SIZE_HEADER_BYTES = 4;

/** A request body of `requestBytes` (at least the header) asking for a reply of `replyBytes`; the rest is random. */
export function requestAskingFor(requestBytes: number, replyBytes: number): Uint8Array {
  const body = randomBytes(Math.max(REPLY_SIZE_HEADER_BYTES, requestBytes));
  body.writeUInt32BE(replyBytes, 0);
  return new Uint8Array(body);
}

/** The reply size a request asks for; 0 for a request too short to say. */
export function replySizeAskedBy(request: Uint8Array): number {
  if (request.byteLength < REPLY_SIZE_HEADER_BYTES) return 0;
  return Buffer.from(request.buffer, request.byteOffset, REPLY_SIZE_HEADER_BYTES).readUInt32BE(0);
}

async function main(): Promise<void> {
  const [natsUrl, subject] = process.argv.slice(2);
  if (!natsUrl || !subject) {
    process.stderr.write('usage: nats-responder <nats url> <subject>\n');
    process.exit(2);
  }
  const connection = await connect({ servers: natsUrl, name: 'mink-bench-responder' });
  const replies = new Map<number, Uint8Array>();
  connection.subscribe(subject, {
    callback: (error, message) => {
      if (error) return;
      const size = replySizeAskedBy(message.data);
      let reply = replies.get(size);
      if (!reply) {
        if (replies.size >= BENCH_BASELINES.natsResponderReplySizesMax) replies.clear();
        reply = new Uint8Array(randomBytes(size));
        replies.set(size, reply);
      }
      message.respond(reply);
    },
  });
  await connection.flush();
  process.stdout.write(`${RESPONDER_READY_LINE}\n`);
  process.stdin.on('close', () => process.exit(0));
  process.stdin.resume();
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`nats-responder: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
