import { createInbox, nanos, type NatsConnection, type Subscription } from 'nats';

/** One entry a pull delivered: its stream sequence and its bytes. */
export interface PulledEntry {
  seq: number;
  data: Uint8Array;
}

/** A pull that is out: its entries in order, and how to give up on it (its iteration then ends). */
export interface PullOut {
  entries: AsyncIterable<PulledEntry>;
  stop(): void;
}

/**
 * The stream sequence of a JetStream delivery from its reply subject: `$JS.ACK.<stream>.<consumer>.<delivered>.
 * <stream seq>.<consumer seq>.<timestamp>.<pending>` (9 tokens), or with a domain and an account hash after
 * `ACK` and a random token at the end (12). Null for anything else.
 */
export function streamSeqOfDelivery(replySubject: string | undefined): number | null {
  if (replySubject === undefined) return null;
  const tokens = replySubject.split('.');
  if (tokens[0] !== '$JS' || tokens[1] !== 'ACK') return null;
  const text = tokens.length === 9 ? tokens[5] : tokens.length >= 11 ? tokens[7] : undefined;
  const seq = Number(text);
  return text !== undefined && /^[0-9]+$/.test(text) && Number.isSafeInteger(seq) && seq > 0 ? seq : null;
}

/** Status codes that end a no_wait pull normally: 404 nothing held, 408 fewer held than asked for (after them). */
const PULL_DONE_STATUSES = new Set([404, 408]);

/**
 * Asks `consumer` of `stream` for up to `batch` entries it holds now (a JetStream `no_wait` pull) and yields
 * them in delivery order. The pull ends after `batch` entries or at the server's status that follows the last
 * one (404: none held, 408: fewer held than asked for); any other status fails the iteration. nats.js's own
 * `fetch` decides from each delivery's pending count when a pull is done and may stop listening while the
 * server still sends the rest of the batch, which the consumer then counts as delivered: the next pull
 * starts after entries nobody received. Here only the server's status ends a pull. A pull of a consumer the
 * server no longer has is never answered: the caller bounds the silence and calls `stop`.
 *
 * With `waitMs`, a pull that finds nothing held waits on the server up to that long for the first entry, then
 * yields what is held by then and ends as above (`no_wait` with `expires`, as nats-server 2.9.10 answers it,
 * the version mink is tested with): an idle reader asks once per `waitMs` instead of once per pause, and gets a new entry as it is stored.
 * Without it, or 0, a pull that finds nothing ends at once (404).
 */
export function pullAvailable(connection: NatsConnection, stream: string, consumer: string, batch: number, waitMs = 0): PullOut {
  const inbox = createInbox();
  const subscription: Subscription = connection.subscribe(inbox, { max: batch + 1 });
  const request = waitMs > 0 ? { batch, no_wait: true, expires: nanos(waitMs) } : { batch, no_wait: true };
  connection.publish(`$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`, new TextEncoder().encode(JSON.stringify(request)), { reply: inbox });
  async function* entries(): AsyncGenerator<PulledEntry> {
    let delivered = 0;
    try {
      for await (const message of subscription) {
        const status = message.headers?.code ?? 0;
        if (status !== 0) {
          if (PULL_DONE_STATUSES.has(status)) return;
          throw new Error(`a pull of consumer ${consumer} of ${stream} was answered ${status} ${message.headers?.description ?? ''}`.trim());
        }
        const seq = streamSeqOfDelivery(message.reply);
        if (seq === null) throw new Error(`a pull of consumer ${consumer} of ${stream} delivered a message without a JetStream reply subject ('${message.reply ?? ''}')`);
        yield { seq, data: message.data };
        delivered += 1;
        if (delivered >= batch) return;
      }
    } finally {
      subscription.unsubscribe();
    }
  }
  return { entries: entries(), stop: () => subscription.unsubscribe() };
}
