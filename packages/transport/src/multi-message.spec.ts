import { InvalidArgumentError } from '@mink/protocol';
import { MULTI_MARKER, decodeMultiMessage, groupForMultiMessages, isMultiMessage, multiMessageBytes, multiMessagePieces } from './multi-message';

const bytes = (...values: number[]) => Uint8Array.from(values);
/** One multi message in one array, as it travels. */
const encodeMultiMessage = (parts: readonly (Uint8Array | readonly Uint8Array[])[]) => Buffer.concat(multiMessagePieces(parts));

describe('multi messages', () => {
  it.each([
    ['one part', [bytes(123, 125)]],
    ['several parts, one empty, bytes of every value', [bytes(0, 255, 1), bytes(), bytes(MULTI_MARKER), bytes(...Array.from({ length: 300 }, (_, index) => index % 256))]],
  ])('round-trips %s', (_name, parts) => {
    const message = encodeMultiMessage(parts);
    expect(message.byteLength).toBe(multiMessageBytes(parts.map((part) => part.byteLength)));
    expect(isMultiMessage(message)).toBe(true);
    expect(decodeMultiMessage(message).map((part) => Array.from(part))).toEqual(parts.map((part) => Array.from(part)));
  });

  it('writes a part given as pieces as those pieces back to back', () => {
    // Proves a request's header, JSON and binary batch land in the message as one part, in order.
    const message = encodeMultiMessage([[bytes(1, 2), bytes(), bytes(3)], bytes(4), [bytes(5, 6, 7)]]);
    expect(decodeMultiMessage(message).map((part) => Array.from(part))).toEqual([[1, 2, 3], [4], [5, 6, 7]]);
  });

  it.each([
    ['JSON', new TextEncoder().encode('{"op":"append"}'), false],
    ['the binary framing', bytes(0x00, 2, 0, 0, 0), false],
    ['an empty message', bytes(), false],
    ['a multi message', bytes(MULTI_MARKER), true],
  ])('tells %s apart', (_name, data, multi) => {
    expect(isMultiMessage(data)).toBe(multi);
  });

  it.each([
    ['no marker', bytes(0x7b, 1, 0, 0, 0), /must start with its marker byte/],
    ['a header cut short', bytes(MULTI_MARKER, 1, 0), /shorter than its header/],
    ['no parts', bytes(MULTI_MARKER, 0, 0, 0, 0), /holds no parts/],
    ['fewer parts than announced', bytes(MULTI_MARKER, 2, 0, 0, 0, 1, 0, 0, 0, 9), /announces 2 parts but ends after 1/],
    ['a part longer than the message', bytes(MULTI_MARKER, 1, 0, 0, 0, 5, 0, 0, 0, 9), /part 0 announces 5 bytes but 1 remain/],
    ['bytes after the last part', bytes(MULTI_MARKER, 1, 0, 0, 0, 1, 0, 0, 0, 9, 9), /has 1 bytes after its 1 parts/],
  ])('refuses %s as InvalidArgument', (_name, data, message) => {
    expect(() => decodeMultiMessage(data)).toThrow(InvalidArgumentError);
    expect(() => decodeMultiMessage(data)).toThrow(message);
  });

  it.each([
    ['nothing', [], 100, 8, []],
    ['all in one message', [10, 10, 10], 100, 8, [[0, 1, 2]]],
    // 5 + 3 × (4 + 20) = 77 fits 77; a fourth part does not.
    ['cut where the bytes would pass the bound', [20, 20, 20, 20], 77, 8, [[0, 1, 2], [3]]],
    ['cut at the part count', [1, 1, 1, 1, 1], 1000, 2, [[0, 1], [2, 3], [4]]],
    ['an oversize request alone, the others grouped around it', [10, 500, 10, 10], 100, 8, [[0], [1], [2, 3]]],
  ])('groups %s', (_name, partBytes, messageBytesMax, partsMax, groups) => {
    expect(groupForMultiMessages(partBytes, messageBytesMax, partsMax)).toEqual(groups);
  });

  it.each([
    ['different keys together', ['a', 'b', 'c'], [[0, 1, 2]]],
    ['a repeated key starting a new message', ['a', 'b', 'a', 'c', 'b', 'b'], [[0, 1], [2, 3, 4], [5]]],
  ])('keeps apart requests of one key: %s', (_name, apartKeys, groups) => {
    expect(groupForMultiMessages(apartKeys.map(() => 10), 1000, 8, apartKeys)).toEqual(groups);
  });
});
