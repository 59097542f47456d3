import { CliError } from './io';
import { jsonlBatches, rowsBody, type JsonlBatch } from './jsonl';

async function* chunksOf(text: string, splitEvery: number): AsyncGenerator<Uint8Array> {
  const bytes = Buffer.from(text, 'utf8');
  for (let at = 0; at < bytes.byteLength; at += splitEvery) yield bytes.subarray(at, at + splitEvery);
}

async function batchesOf(text: string, splitEvery: number, bounds = { rowsMax: 2, bytesMax: 1_000 }): Promise<JsonlBatch[]> {
  const batches: JsonlBatch[] = [];
  for await (const batch of jsonlBatches(chunksOf(text, splitEvery), bounds)) batches.push(batch);
  return batches;
}

describe('jsonlBatches', () => {
  const INPUT = '{"id":1}\n{"id":2,"name":"é"}\n\n{"id":3}\r\n{"id":90071992547409931}\n{"id":5}';
  it.each([1, 2, 3, 7, 1_000])('cuts rows into batches in order, keeping their text, whatever the chunk size (%i bytes)', async (splitEvery) => {
    // Proves split lines, split UTF-8 characters, blank lines, CRLF and a last line without newline; big integers stay text.
    const batches = await batchesOf(INPUT, splitEvery);
    expect(batches.map((batch) => [batch.firstLine, batch.rows])).toEqual([
      [1, ['{"id":1}', '{"id":2,"name":"é"}']],
      [4, ['{"id":3}', '{"id":90071992547409931}']],
      [6, ['{"id":5}']],
    ]);
    expect(batches.reduce((sum, batch) => sum + batch.inputBytes, 0)).toBe(Buffer.byteLength(INPUT));
  });

  it('closes a batch at the byte bound, and gives a row larger than the bound a batch of its own', async () => {
    const rows = ['{"a":"xxxxxxxx"}', '{"b":1}', '{"c":"yyyyyyyyyyyyyyyyyyyyyyyy"}', '{"d":2}'];
    const batches = await batchesOf(rows.join('\n'), 5, { rowsMax: 10, bytesMax: 24 });
    expect(batches.map((batch) => batch.rows)).toEqual([[rows[0], rows[1]], [rows[2]], [rows[3]]]);
  });

  it.each<[string, string, string]>([
    ['a line that is not JSON', '{"id":1}\n{"id":\n', 'line 2 is not JSON'],
    ['an array instead of a row', '{"id":1}\n[1,2]\n', 'line 2 is not a JSON object'],
    ['a bare number', '7\n', 'line 1 is not a JSON object'],
  ])('stops at %s, naming its line, after yielding the batches before it', async (_name, text, message) => {
    const seen: string[][] = [];
    const reading = (async () => {
      for await (const batch of jsonlBatches(chunksOf(text, 3), { rowsMax: 1, bytesMax: 1_000 })) seen.push(batch.rows);
    })();
    await expect(reading).rejects.toThrow(CliError);
    await expect(reading).rejects.toThrow(message);
    expect(seen).toEqual(text.startsWith('{"id":1}') ? [['{"id":1}']] : []);
  });

  it('refuses bytes that are not UTF-8', async () => {
    async function* bad(): AsyncGenerator<Uint8Array> {
      yield Buffer.from('{"id":1}\n{"name":"');
      yield Uint8Array.of(0xff, 0xfe);
      yield Buffer.from('"}\n');
    }
    const reading = (async () => {
      for await (const _batch of jsonlBatches(bad(), { rowsMax: 10, bytesMax: 1_000 })) void _batch;
    })();
    await expect(reading).rejects.toThrow('the input after line 1 is not UTF-8');
  });

  it('wraps rows in the body of an append or put call', () => {
    expect(JSON.parse(rowsBody(['{"id":1}', '{"id":2}']))).toEqual({ rows: [{ id: 1 }, { id: 2 }] });
    expect(rowsBody(['{"id":90071992547409931}'])).toBe('{"rows":[{"id":90071992547409931}]}');
  });
});
