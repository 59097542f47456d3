import { MinkError } from './errors';
import type { ScanPage } from './messages';

/**
 * Scan pages over HTTP. docs/architecture.md §1 sends all inter-service traffic over NATS; scan pages are the exception,
 * because a page (up to `LIMITS.scanPageBytesMax` of Arrow IPC) crossing the data node, nats-server and the
 * caller's NATS parser cost more than reading it from S3. A data node answers `POST INTERNAL_SCAN_PATH` on
 * its HTTP port (the `http` address of its NodeRecord, also in `TableRoute.leaders` and `Redirect.http`)
 * with the JSON of a `ScanRequest` as the body, by the same `DataPlane.scan` that answers it over NATS:
 *
 * - 200: the page's Arrow IPC stream as the body (`SCAN_PAGE_CONTENT_TYPE`, with Content-Length), and
 *   `records`, `nextOffset`, `highWatermark`, `startOffset` of the `ScanPage` in the `SCAN_PAGE_HEADERS`;
 * - an error: the status of `HTTP_STATUS_OF_CODE` and the body `{error:{code, message, redirect?,
 *   retryAfterMs?}}` (`toErrorBody`), so `fromErrorBody` gives the caller the same typed error as over NATS
 *   (NotLeader with its redirect, Unavailable with its retry delay, …).
 *
 * The route is internal: the gateway and the TypeScript client call it, never an API user. In a cluster
 * with a secret (`MINK_CLUSTER_SECRET_FILE`) the node asks for it on every `/internal/` route: a request
 * without `Authorization: Cluster <secret>` (`clusterAuthorizationOf`), or with another secret, is answered
 * 401 with an `Unauthenticated` error body before its body is read. A caller without the secret (a
 * TypeScript client outside the cluster) then scans that node over NATS.
 */
export const INTERNAL_SCAN_PATH = '/internal/v1/scan';

/** The path prefix of every internal route of a service: the routes that ask for the cluster secret. */
export const INTERNAL_ROUTES_PREFIX = '/internal/';

/**
 * The `Authorization` scheme of the cluster secret. Not `Bearer`: the secret is no token of the gateway's
 * tokens file, and a request carrying it names which of the two it means.
 */
export const CLUSTER_AUTHORIZATION_SCHEME = 'Cluster';

/** The `Authorization` header value that carries the cluster secret `secret`. */
export function clusterAuthorizationOf(secret: string): string {
  return `${CLUSTER_AUTHORIZATION_SCHEME} ${secret}`;
}

export const SCAN_PAGE_CONTENT_TYPE = 'application/vnd.apache.arrow.stream';

/** The headers of a page's metadata (lower case, as Node.js hands incoming headers over). */
export const SCAN_PAGE_HEADERS = {
  records: 'mink-records',
  nextOffset: 'mink-next-offset',
  highWatermark: 'mink-high-watermark',
  startOffset: 'mink-start-offset',
} as const;

/** A page without its bytes: what the headers of a 200 carry. */
export type ScanPageMetadata = Omit<ScanPage, 'batch'>;

export function scanPageHeadersOf(page: ScanPageMetadata): Record<string, string> {
  return {
    [SCAN_PAGE_HEADERS.records]: String(page.records),
    [SCAN_PAGE_HEADERS.nextOffset]: String(page.nextOffset),
    [SCAN_PAGE_HEADERS.highWatermark]: String(page.highWatermark),
    [SCAN_PAGE_HEADERS.startOffset]: String(page.startOffset),
  };
}

/**
 * The metadata of a page from the headers of a 200 (`header` looks one up by its lower-case name). A
 * missing or malformed header is a reply this protocol does not produce: an `Internal` error, not retried.
 */
export function scanPageMetadataOf(header: (name: string) => string | string[] | undefined): ScanPageMetadata {
  const read = (field: keyof ScanPageMetadata): number => {
    const name = SCAN_PAGE_HEADERS[field];
    const text = header(name);
    const value = typeof text === 'string' && /^\d+$/.test(text) ? Number(text) : NaN;
    if (!Number.isSafeInteger(value)) throw new MinkError('Internal', `a scan page reply has no valid ${name} header (got ${JSON.stringify(text)})`);
    return value;
  };
  return { records: read('records'), nextOffset: read('nextOffset'), highWatermark: read('highWatermark'), startOffset: read('startOffset') };
}
