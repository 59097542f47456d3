import { tableFromIPC } from 'apache-arrow';
import type { ScanPage } from '@mink/protocol';
import { encodeBatch, encodeScanPage } from '@mink/records';
import { scanFormatOf, scanReplyOf, type ScanFormat } from './scan-reply';

const COLUMNS = [
  { name: 'id', type: 'int64' as const },
  { name: 'name', type: 'string' as const },
];

/** Pages of `pageRecords` records each over 10 stored records from offset 0, as a data node sends them. */
function pagesOf(pageRecords: number, highWatermark = 10): ScanPage[] {
  const stored = [{ startOffset: 0, payload: encodeBatch(COLUMNS, Array.from({ length: 10 }, (_, index) => ({ id: BigInt(index), name: `n${index}` })), 1_000) }];
  const pages: ScanPage[] = [];
  let offset = 0;
  do {
    const page = encodeScanPage({ columns: COLUMNS, changelog: false }, stored, offset, pageRecords, 1 << 20);
    pages.push({ records: page.records, nextOffset: page.nextOffset, highWatermark, startOffset: 0, batch: Buffer.concat(page.stream) });
    offset = page.nextOffset;
  } while (offset < 10);
  return pages;
}

async function bodyOf(format: ScanFormat, pages: ScanPage[]): Promise<{ headers: Record<string, string>; bytes: Buffer; streamed: boolean }> {
  async function* rest(): AsyncGenerator<ScanPage> {
    yield* pages.slice(1);
  }
  const reply = scanReplyOf(format, { offset: 0, limit: 100 }, pages[0]!, rest());
  if (typeof reply.body === 'string' || reply.body instanceof Uint8Array) return { headers: reply.headers, bytes: Buffer.from(reply.body), streamed: false };
  const chunks: Buffer[] = [];
  for await (const chunk of reply.body) chunks.push(Buffer.from(chunk));
  return { headers: reply.headers, bytes: Buffer.concat(chunks), streamed: true };
}

describe('scanFormatOf', () => {
  it.each([
    [undefined, 'json'],
    ['*/*', 'json'],
    ['application/json', 'json'],
    ['application/x-ndjson', 'ndjson'],
    ['application/vnd.apache.arrow.stream', 'arrow'],
    ['text/html, application/vnd.apache.arrow.stream;q=0.9', 'arrow'],
    ['Application/X-NDJSON; charset=utf-8', 'ndjson'],
  ])('reads Accept %p as %p', (accept, format) => {
    expect(scanFormatOf(accept)).toBe(format);
  });
});

describe('scanReplyOf', () => {
  it.each([1, 3, 10])('gives the same records in every format whether one page or many (%p records a page)', async (pageRecords) => {
    const pages = pagesOf(pageRecords);
    const json = await bodyOf('json', pages);
    expect(json.streamed).toBe(pages.length > 1);
    const parsed = JSON.parse(json.bytes.toString());
    expect(parsed.records.map((record: any) => [record.offset, record.row.id, record.row.name])).toEqual(Array.from({ length: 10 }, (_, index) => [index, String(index), `n${index}`]));
    expect(parsed).toMatchObject({ nextOffset: 10, highWatermark: 10 });
    expect(json.headers).toEqual({ 'Mink-Next-Offset': '10', 'Mink-High-Watermark': '10' });

    const ndjson = await bodyOf('ndjson', pages);
    expect(ndjson.bytes.toString().split('\n')).toEqual([...parsed.records.map((record: unknown) => JSON.stringify(record)), '']);

    const arrow = tableFromIPC((await bodyOf('arrow', pages)).bytes);
    expect(arrow.numRows).toBe(10);
    expect(arrow.getChild('name')!.toArray()).toEqual(parsed.records.map((record: any) => record.row.name));
  });

  it('states where the scan ends before the rest arrives: at the limit or the first page\'s high watermark', () => {
    const pages = pagesOf(2, 10);
    const never = (async function* () {})();
    expect(scanReplyOf('json', { offset: 0, limit: 5 }, pages[0]!, never).headers['Mink-Next-Offset']).toBe('5');
    expect(scanReplyOf('json', { offset: 0, limit: 500 }, pages[0]!, never).headers['Mink-Next-Offset']).toBe('10');
  });

  it('answers an empty scan with an empty body of each format', async () => {
    const empty: ScanPage = { records: 0, nextOffset: 7, highWatermark: 7, startOffset: 0, batch: Buffer.concat(encodeScanPage({ columns: COLUMNS, changelog: false }, [], 7, 10, 1 << 20).stream) };
    expect(JSON.parse((await bodyOf('json', [empty])).bytes.toString())).toEqual({ records: [], nextOffset: 7, highWatermark: 7 });
    expect((await bodyOf('ndjson', [empty])).bytes.toString()).toBe('');
    expect(tableFromIPC((await bodyOf('arrow', [empty])).bytes).numRows).toBe(0);
  });
});
