import type { InFlightBytes } from '@mink/runtime';

/** The messages one call holds bytes for; given back together when the call ends (`HeldMessages.releaseCall`). */
export type CallHolding = Set<object>;

/**
 * The bytes of received gRPC request messages the gateway holds, against one bound (`InFlightBytes`, of
 * `LIMITS.grpcInFlightMessageBytesMax`): the request decoder records each message's size (`measured`); a
 * call takes a message's bytes when its handler is handed the message (`admit`, which refuses when they do
 * not fit) and gives them back when the handler is done with it (`release`) or, at the latest, when the
 * call ends (`releaseCall`). Releasing is idempotent, so both may happen.
 *
 * Sizes are kept in weak maps keyed by the decoded message, so a message nobody admits (its call ended
 * first) is forgotten with it.
 */
export class HeldMessages {
  private readonly sizes = new WeakMap<object, number>();
  private readonly holdings = new WeakMap<object, CallHolding>();

  constructor(private readonly inFlight: InFlightBytes) {}

  /** Bytes held now. */
  get heldBytes(): number {
    return this.inFlight.heldBytes;
  }

  /** Records that `message` was decoded from `bytes` bytes; returns it. */
  measured<T>(message: T, bytes: number): T {
    if (typeof message === 'object' && message !== null) this.sizes.set(message, bytes);
    return message;
  }

  /** The bytes `message` was decoded from, when `measured` recorded them. */
  sizeOf(message: unknown): number | undefined {
    return typeof message === 'object' && message !== null ? this.sizes.get(message) : undefined;
  }

  /**
   * Takes the bytes of `message` for the call of `holding`, or answers false when they do not fit. A message
   * of unknown size (a service whose decoder does not measure, such as health) holds nothing.
   */
  admit(message: unknown, holding: CallHolding): boolean {
    const bytes = this.sizeOf(message);
    if (bytes === undefined || this.holdings.has(message as object)) return true;
    if (!this.inFlight.admit(bytes)) return false;
    holding.add(message as object);
    this.holdings.set(message as object, holding);
    return true;
  }

  /** Gives back the bytes of `message`, if it holds any. */
  release(message: unknown): void {
    if (typeof message !== 'object' || message === null) return;
    const holding = this.holdings.get(message);
    if (holding === undefined) return;
    this.holdings.delete(message);
    holding.delete(message);
    this.inFlight.release(this.sizes.get(message)!);
  }

  /** Gives back the bytes of every message the call of `holding` still holds. */
  releaseCall(holding: CallHolding): void {
    for (const message of [...holding]) this.release(message);
  }
}
