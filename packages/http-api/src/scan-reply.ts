import { scanEndOf, type ScanOptions } from '@mink/client';
import type { ScanPage } from '@mink/protocol';
import { END_OF_STREAM, ipcStreamParts, scanJsonText } from '@mink/records';

/** The three forms of a scan reply (docs/architecture.md §12), chosen by the request's Accept header. */
export type ScanFormat = 'json' | 'ndjson' | 'arrow';

export const SCAN_CONTENT_TYPES: Record<ScanFormat, string> = {
  json: 'application/json; charset=utf-8',
  ndjson: 'application/x-ndjson; charset=utf-8',
  arrow: 'application/vnd.apache.arrow.stream',
};

/** Arrow when the Accept header names its stream type, NDJSON when it names that, JSON otherwise. */
export function scanFormatOf(accept: string | undefined): ScanFormat {
  const types = (accept ?? '').split(',').map((part) => part.split(';')[0]!.trim().toLowerCase());
  if (types.includes('application/vnd.apache.arrow.stream')) return 'arrow';
  if (types.includes('application/x-ndjson')) return 'ndjson';
  return 'json';
}

export interface ScanReply {
  contentType: string;
  /** `Mink-Next-Offset` and `Mink-High-Watermark`, known from the first page. */
  headers: Record<string, string>;
  /** The body: whole when one page held the scan, else the chunks to stream as pages arrive. */
  body: Uint8Array | string | AsyncIterable<Uint8Array | string>;
}

/**
 * The reply to a scan from its pages: the first page is already there (so errors before it are plain
 * HTTP errors and the headers can state where the scan ends); the rest are encoded as they arrive. JSON is
 * `{records:[…], nextOffset, highWatermark}`, NDJSON one record per line, Arrow one IPC stream (the first
 * page's schema, every page's record batches, one end-of-stream marker).
 */
export function scanReplyOf(format: ScanFormat, options: Required<Pick<ScanOptions, 'offset' | 'limit'>>, first: ScanPage, rest: AsyncIterator<ScanPage>): ScanReply {
  const nextOffset = scanEndOf(options.offset, options.limit, first);
  const headers = { 'Mink-Next-Offset': String(nextOffset), 'Mink-High-Watermark': String(first.highWatermark) };
  const contentType = SCAN_CONTENT_TYPES[format];
  if (first.nextOffset >= nextOffset) return { contentType, headers, body: wholeBody(format, first) };
  return { contentType, headers, body: streamedBody(format, first, rest) };
}

function wholeBody(format: ScanFormat, page: ScanPage): Uint8Array {
  switch (format) {
    case 'arrow':
      return page.batch;
    case 'ndjson':
      return ndjsonOf(page);
    case 'json':
      return Buffer.concat([Buffer.from('{"records":['), scanJsonText(page.batch, ',').text, jsonEndOf(page)]);
  }
}

function jsonEndOf(page: ScanPage): Buffer {
  return Buffer.from(`],"nextOffset":${page.nextOffset},"highWatermark":${page.highWatermark}}`);
}

async function* streamedBody(format: ScanFormat, first: ScanPage, rest: AsyncIterator<ScanPage>): AsyncGenerator<Uint8Array | string> {
  let page = first;
  let index = 0;
  for (;;) {
    switch (format) {
      case 'arrow': {
        const parts = ipcStreamParts(page.batch);
        if (index === 0) yield parts.schema;
        yield parts.messages;
        break;
      }
      case 'ndjson':
        yield ndjsonOf(page);
        break;
      case 'json': {
        const { text, records } = scanJsonText(page.batch, ',');
        if (index === 0) yield '{"records":[';
        else if (records > 0) yield ',';
        yield text;
        break;
      }
    }
    index++;
    const next = await rest.next();
    if (next.done) break;
    page = next.value;
  }
  if (format === 'arrow') yield END_OF_STREAM;
  if (format === 'json') yield jsonEndOf(page);
}

function ndjsonOf(page: ScanPage): Buffer {
  return scanJsonText(page.batch, '\n', true).text;
}
