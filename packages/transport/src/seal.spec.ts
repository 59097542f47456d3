import fc from 'fast-check';
import { crc32 } from 'node:zlib';
import { MULTI_MARKER } from './multi-message';
import { REPLY_SEAL_BYTES, REQUEST_SEAL_BYTES, SEAL_MARKER, openReply, openRequest, sealReply, sealRequest } from './seal';

const bytes = (...values: number[]) => Uint8Array.from(values);
const text = (value: string) => new TextEncoder().encode(value);
const array = (value: Uint8Array) => Array.from(value);

describe('sealed messages', () => {
  it('seal a request: the marker, the CRC-32 of the pieces back to back, then the pieces', () => {
    const { message, crc } = sealRequest([text('{"op":'), bytes(), text('"append"}')]);
    expect(crc).toBe(crc32(text('{"op":"append"}')));
    expect(message[0]).toBe(SEAL_MARKER);
    expect(Buffer.from(message).readUInt32LE(1)).toBe(crc);
    expect(Buffer.from(message.subarray(REQUEST_SEAL_BYTES)).toString()).toBe('{"op":"append"}');
    expect(openRequest(message)).toEqual({ sealed: true, body: text('{"op":"append"}'), crc });
  });

  it('seal a reply with its own CRC and the CRC of the request it answers', () => {
    const reply = sealReply([text('{"result":'), text('1}')], 0xdeadbeef);
    expect(reply[0]).toBe(SEAL_MARKER);
    expect(Buffer.from(reply).readUInt32LE(1)).toBe(crc32(text('{"result":1}')));
    expect(Buffer.from(reply).readUInt32LE(5)).toBe(0xdeadbeef);
    expect(openReply(reply, 0xdeadbeef)).toEqual({ body: text('{"result":1}') });
  });

  it.each([
    ['JSON', text('{"op":"status"}')],
    ['the binary framing', bytes(0, 2, 0, 0, 0, 123, 125, 9)],
    ['a multi message', bytes(MULTI_MARKER, 1, 0, 0, 0, 2, 0, 0, 0, 123, 125)],
    ['nothing', bytes()],
  ])('hand a request that is not sealed (%s) on as it is', (_name, data) => {
    expect(openRequest(data)).toEqual({ sealed: false, body: data });
  });

  it.each([
    ['shorter than its seal', bytes(SEAL_MARKER, 1, 2), /shorter than its seal/],
    ['a CRC that does not match', bytes(SEAL_MARKER, 0, 0, 0, 0, 123, 125), /the CRC-32 of the request's 2 bytes is 0x[0-9a-f]{8}, its seal says 0x00000000/],
  ])('refuse a sealed request %s', (_name, data, reason) => {
    const opened = openRequest(data);
    expect(opened).toMatchObject({ damaged: expect.stringMatching(reason) });
  });

  it('name the CRC a damaged request announces, so the refusal reaches its caller', () => {
    const { message, crc } = sealRequest([text('{"op":"append"}')]);
    message[message.length - 1] ^= 0x01;
    expect(openRequest(message)).toEqual({ damaged: expect.stringContaining('CRC-32'), crc });
  });

  it.each([
    ['not sealed (the CI case: NATS protocol text where the reply should be)', text('MSG mink.node.1.rpc 5 _INBOX.x 12\r\n{"result":1}'), /not sealed \(it starts "MSG mink.node.1\."\)/],
    ['empty', bytes(), /the reply of 0 bytes is not sealed/],
    ['shorter than its seal', bytes(SEAL_MARKER, 0, 0, 0, 0), /shorter than its seal/],
    ['a CRC that does not match', (() => { const reply = sealReply([text('{"result":1}')], 7); reply[REPLY_SEAL_BYTES] ^= 0x20; return reply; })(), /the CRC-32 of the reply's 12 bytes/],
    ['the reply to another request', sealReply([text('{"result":1}')], 8), /answers the request of CRC-32 0x00000008, not this one \(0x00000007\)/],
  ])('refuse a reply that is %s', (_name, data, reason) => {
    expect(openReply(data, 7)).toEqual({ damaged: expect.stringMatching(reason) });
  });

  it('refuse any request or reply with bytes changed anywhere, seal included', () => {
    // Proves the point of the seal: a change of up to four consecutive bytes (CRC-32 catches every burst of up to
    // 32 bits) is never taken for the message that was sent.
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 0, maxLength: 300 }),
        fc.nat(),
        fc.uint8Array({ minLength: 1, maxLength: 4 }),
        (body, at, change) => {
          const { message, crc } = sealRequest([body]);
          const reply = sealReply([body], crc);
          for (const sealed of [message, reply]) {
            const start = at % sealed.length;
            const damaged = Uint8Array.from(sealed);
            let changed = false;
            change.forEach((value, index) => {
              if (start + index >= damaged.length || value === 0) return;
              damaged[start + index] ^= value;
              changed = true;
            });
            if (!changed) continue;
            const opened = sealed === message ? openRequest(damaged) : openReply(damaged, crc);
            const stillTaken = 'body' in opened && (!('sealed' in opened) || opened.sealed);
            expect(stillTaken).toBe(false);
          }
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('round-trips any body, in any number of pieces', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 6 }), (pieces) => {
        const whole = Uint8Array.from(pieces.flatMap((piece) => array(piece)));
        const { message, crc } = sealRequest(pieces);
        const opened = openRequest(message);
        expect(opened).toMatchObject({ sealed: true, crc });
        expect(array((opened as { body: Uint8Array }).body)).toEqual(array(whole));
        expect(array((openReply(sealReply(pieces, crc), crc) as { body: Uint8Array }).body)).toEqual(array(whole));
      }),
    );
  });
});
