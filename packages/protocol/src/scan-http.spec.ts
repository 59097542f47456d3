import { MinkError } from './errors';
import { SCAN_PAGE_HEADERS, scanPageHeadersOf, scanPageMetadataOf, type ScanPageMetadata } from './scan-http';

/** The page metadata of the internal scan route, written as headers by the data node and read back by the client. */
describe('scan page headers', () => {
  const page: ScanPageMetadata = { records: 25_600, nextOffset: 9_007_199_254_740_991, highWatermark: 9_007_199_254_740_991, startOffset: 0 };

  it('reads back what it writes, by lower-case name as Node.js hands them over', () => {
    // Proves the two ends agree on names and number formats, up to the largest safe offset.
    const headers = scanPageHeadersOf(page);
    expect(Object.keys(headers).every((name) => name === name.toLowerCase())).toBe(true);
    expect(scanPageMetadataOf((name) => headers[name])).toEqual(page);
  });

  test.each<[string, Record<string, string | string[] | undefined>]>([
    ['a missing header', { ...scanPageHeadersOf(page), [SCAN_PAGE_HEADERS.startOffset]: undefined }],
    ['a negative number', { ...scanPageHeadersOf(page), [SCAN_PAGE_HEADERS.records]: '-1' }],
    ['a fraction', { ...scanPageHeadersOf(page), [SCAN_PAGE_HEADERS.nextOffset]: '1.5' }],
    ['a number beyond the safe integers', { ...scanPageHeadersOf(page), [SCAN_PAGE_HEADERS.highWatermark]: '9007199254740993' }],
    ['an empty header', { ...scanPageHeadersOf(page), [SCAN_PAGE_HEADERS.records]: '' }],
    ['a header given twice', { ...scanPageHeadersOf(page), [SCAN_PAGE_HEADERS.records]: ['1', '2'] }],
  ])('refuses %s as an Internal error naming the header', (_case, headers) => {
    // Proves a reply this protocol does not produce is never read as a page (and is not retried as Unavailable).
    const read = () => scanPageMetadataOf((name) => headers[name]);
    expect(read).toThrow(MinkError);
    expect(read).toThrow(/a scan page reply has no valid mink-/);
    try {
      read();
    } catch (error) {
      expect((error as MinkError).code).toBe('Internal');
    }
  });
});
