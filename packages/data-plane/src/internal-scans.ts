import { InvalidArgumentError, type ScanPageMetadata, type ScanRequest } from '@mink/protocol';
import type { WithBinary } from '@mink/transport';
import { Counter, type Registry } from 'prom-client';
import type { DataPlane } from './data-plane';
import { notRegistered } from './incarnation';
import type { DataNodeMetrics } from './node-metrics';

/** A scan page as the internal HTTP route sends it: its metadata and its Arrow IPC stream as parts. */
export interface InternalScanPage {
  metadata: ScanPageMetadata;
  parts: readonly Uint8Array[];
  byteLength: number;
}

/**
 * The scan pages of the internal HTTP route (`INTERNAL_SCAN_PATH` in @mink/protocol): the body is the
 * `ScanRequest` a client would send over NATS, answered by the data plane of this node's current
 * incarnation exactly as over NATS (leadership, read fence, long poll, errors), except that the page is
 * not cut to a NATS message. While no incarnation is registered the answer is Unavailable, as over NATS.
 */
export class InternalScans {
  private readonly pages: Counter | undefined;
  private readonly bytes: Counter | undefined;

  constructor(
    private readonly nodeId: string,
    /** The data plane of the current incarnation; null while the node registers one. */
    private readonly current: () => DataPlane | null,
    registry?: Registry,
    /** Counts each page as a scan of its table and bucket, as over NATS. */
    private readonly metrics?: DataNodeMetrics,
  ) {
    if (registry) {
      this.pages = new Counter({ name: 'mink_internal_scan_pages_total', help: 'Scan pages served over the internal HTTP route', registers: [registry] });
      this.bytes = new Counter({ name: 'mink_internal_scan_page_bytes_total', help: 'Bytes of the scan pages served over the internal HTTP route', registers: [registry] });
    }
  }

  async page(body: unknown): Promise<InternalScanPage> {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new InvalidArgumentError('a scan page request must be the JSON object of a scan request {table, tableId, partition, bucket, offset, limit, columns?, waitMs?}');
    }
    const data = this.current() ?? notRegistered(this.nodeId);
    const request: ScanRequest = { ...(body as ScanRequest), op: 'scan' };
    const answer: WithBinary = this.metrics ? await this.metrics.track(request, () => data.scan(request, 'http')) : await data.scan(request, 'http');
    const parts = answer.bytes instanceof Uint8Array ? [answer.bytes] : answer.bytes;
    let byteLength = 0;
    for (const part of parts) byteLength += part.byteLength;
    this.pages?.inc();
    this.bytes?.inc(byteLength);
    return { metadata: answer.result as ScanPageMetadata, parts, byteLength };
  }
}
