import { InFlightBytes } from '@mink/runtime';
import { HeldMessages, type CallHolding } from './held-messages';

/**
 * The accounting of gRPC request messages against the in-flight bound: measured messages take their bytes
 * when admitted and give them back exactly once, by the handler or at the end of their call at the latest;
 * unmeasured ones (health, reflection) hold nothing.
 */
describe('HeldMessages', () => {
  it('takes the bytes of measured messages, refuses one that does not fit, and gives each back once', () => {
    const held = new HeldMessages(new InFlightBytes(100));
    const call: CallHolding = new Set();
    const first = held.measured({ table: 'a' }, 60);
    const second = held.measured({ table: 'b' }, 60);
    expect([held.admit(first, call), held.heldBytes]).toEqual([true, 60]);
    // Admitting the same message again (a handler handed it twice) takes nothing more.
    expect([held.admit(first, call), held.heldBytes]).toEqual([true, 60]);
    expect([held.admit(second, call), held.heldBytes]).toEqual([false, 60]);
    held.release(first);
    held.release(first);
    expect(held.heldBytes).toBe(0);
    expect([held.admit(second, call), held.heldBytes, call.size]).toEqual([true, 60, 1]);
    held.releaseCall(call);
    expect([held.heldBytes, call.size]).toEqual([0, 0]);
  });

  it('admits a message alone even when it is larger than the bound, as InFlightBytes does', () => {
    // A message up to grpcMessageBytesMax must be servable: the bound is at least that (assertLimits).
    const held = new HeldMessages(new InFlightBytes(100));
    expect(held.admit(held.measured({ big: true }, 500), new Set())).toBe(true);
  });

  it('holds nothing for a message it did not measure, nor for a value that is no object', () => {
    const held = new HeldMessages(new InFlightBytes(100));
    const call: CallHolding = new Set();
    expect([held.admit({ service: '' }, call), held.admit('text', call), held.measured('text', 5), held.heldBytes, call.size]).toEqual([true, true, 'text', 0, 0]);
    held.release({ service: '' });
    held.release(undefined);
    expect(held.heldBytes).toBe(0);
  });
});
