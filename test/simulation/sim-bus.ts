import { NatsError, type Msg, type NatsConnection, type Subscription } from 'nats';
import { GatedDeliveries, type ProcessGate } from './process-gate';
import type { SimRandom } from './sim-random';

/** What the bus does to messages: each request or reply may be lost, a request delivered twice, each hop delayed. */
export interface BusFaults {
  dropChance: number;
  duplicateChance: number;
  delayMsMax: number;
}

export const NO_BUS_FAULTS: BusFaults = { dropChance: 0, duplicateChance: 0, delayMsMax: 0 };

interface SimSubscription {
  subject: string;
  queue: string | undefined;
  connection: SimConnection;
  deliveries: GatedDeliveries<Msg>;
  closed: boolean;
}

/** NATS's max_payload as a mink cluster configures it (8 MiB). */
const MAX_PAYLOAD = 8 * 1024 * 1024;

/**
 * The request bus of the simulation: NATS request/reply and queue groups between simulated processes, with
 * the faults of a real network (loss, duplication, delay) drawn from the seeded random source. A request
 * to a subject nobody serves fails at once with "no responders" (503), one that gets no reply times out
 * with nats.js's TIMEOUT code, as `requestJson` expects. A dead process's subscriptions are gone (its TCP
 * connection closed); a paused one's stay, and messages wait for it.
 */
export class SimBus {
  private readonly subscriptions = new Set<SimSubscription>();
  faults: BusFaults = NO_BUS_FAULTS;

  constructor(private readonly random: SimRandom) {}

  connection(gate: ProcessGate): SimConnection {
    return new SimConnection(this, gate);
  }

  subscribe(subscription: SimSubscription): void {
    this.subscriptions.add(subscription);
  }

  unsubscribe(subscription: SimSubscription): void {
    subscription.closed = true;
    this.subscriptions.delete(subscription);
  }

  /** Forgets every subscription of a connection (its process died). */
  disconnect(connection: SimConnection): void {
    for (const subscription of [...this.subscriptions]) if (subscription.connection === connection) this.unsubscribe(subscription);
  }

  private delayMs(): number {
    return this.faults.delayMsMax > 0 ? this.random.integer(0, this.faults.delayMsMax) : 0;
  }

  private later(run: () => void): void {
    const delayMs = this.delayMs();
    if (delayMs === 0) setImmediate(run);
    else setTimeout(run, delayMs);
  }

  /** The subscriptions a message to `subject` reaches: every plain one, and one member of each queue group. */
  private receivers(subject: string): SimSubscription[] {
    const matching = [...this.subscriptions].filter((subscription) => subscription.subject === subject);
    const plain = matching.filter((subscription) => subscription.queue === undefined);
    const groups = new Map<string, SimSubscription[]>();
    for (const subscription of matching) {
      if (subscription.queue === undefined) continue;
      groups.set(subscription.queue, [...(groups.get(subscription.queue) ?? []), subscription]);
    }
    return [...plain, ...[...groups.values()].map((members) => this.random.choice(members))];
  }

  request(from: SimConnection, subject: string, payload: Uint8Array, timeoutMs: number): Promise<Msg> {
    return new Promise<Msg>((resolve, reject) => {
      const receivers = this.receivers(subject);
      if (receivers.length === 0) {
        setImmediate(() => reject(new NatsError('503', '503')));
        return;
      }
      let settled = false;
      const timer = setTimeout(() => {
        if (settled) return;
        settled = true;
        reject(new NatsError('TIMEOUT', 'TIMEOUT'));
      }, timeoutMs);
      const answer = (data: Uint8Array): void => {
        if (this.random.chance(this.faults.dropChance)) return;
        this.later(() => {
          // The reply reaches the requester only while it runs; a dead requester never sees it.
          void from.gate.pass().then(() => {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            resolve({ subject, data, reply: '', sid: 0, respond: () => false } as unknown as Msg);
          });
        });
      };
      const copies = this.random.chance(this.faults.duplicateChance) ? 2 : 1;
      for (const receiver of receivers) {
        for (let copy = 0; copy < copies; copy++) {
          if (this.random.chance(this.faults.dropChance)) continue;
          const msg = {
            subject,
            data: payload.slice(),
            reply: `_INBOX.${subject}`,
            sid: 0,
            respond: (data?: Uint8Array) => {
              answer(data ?? new Uint8Array(0));
              return true;
            },
          } as unknown as Msg;
          this.later(() => {
            if (!receiver.closed) receiver.deliveries.push(msg);
          });
        }
      }
    });
  }
}

/** A simulated process's connection to the bus: the part of nats.js's `NatsConnection` that mink's RPC uses. */
export class SimConnection {
  readonly info = { max_payload: MAX_PAYLOAD };

  constructor(
    private readonly bus: SimBus,
    readonly gate: ProcessGate,
  ) {}

  subscribe(subject: string, options: { queue?: string; callback: (error: NatsError | null, msg: Msg) => void }): Subscription {
    const subscription: SimSubscription = {
      subject,
      queue: options.queue,
      connection: this,
      deliveries: new GatedDeliveries<Msg>(this.gate, (msg) => options.callback(null, msg)),
      closed: false,
    };
    this.bus.subscribe(subscription);
    return { unsubscribe: () => this.bus.unsubscribe(subscription) } as unknown as Subscription;
  }

  async request(subject: string, payload: Uint8Array = new Uint8Array(0), options: { timeout?: number } = {}): Promise<Msg> {
    await this.gate.pass();
    return this.bus.request(this, subject, payload, options.timeout ?? 1000);
  }

  /** The process died: its subscriptions are gone at once (the server sees its TCP connection close). */
  close(): void {
    this.bus.disconnect(this);
  }

  /** This connection as the NatsConnection the services take. */
  asNats(): NatsConnection {
    return this as unknown as NatsConnection;
  }
}
