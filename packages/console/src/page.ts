/**
 * The console page (static/index.html loads it as a module): polls the cluster's summary
 * (`GET /v1/cluster?buckets=false`, or `?table=` with the buckets of the table the user selected) and
 * `GET /v1/tables` once a second and redraws the coordinator, nodes, tables and the selected table's
 * buckets; previews a rebalance with a dry run and carries it out once confirmed. It never asks for every
 * bucket of the cluster: at 100 000 buckets that answer is 15 MB. Every text that comes from the cluster goes into the page as
 * `textContent`, never as HTML, so a table name cannot inject markup.
 *
 * When the gateway asks for a bearer token (401), the page asks the user for one, keeps it in
 * sessionStorage (gone with the tab) and sends it as `Authorization: Bearer` on every call.
 */
import { bucketKey, durationTextMs, formatAge, formatBytes, formatLake, lakeFreshness, LAKE_FRESHNESS_DEFAULT_MS, formatCount, formatRate, movedBuckets, recentScanOf, rowText, sparklinePoints, tableFigures, throughputSeries, type BucketStatus, type ClusterSample, type ClusterStatus, type ScannedRecord, type ThroughputPoint } from './figures.js';

/** Time between the end of one poll and the start of the next. */
const POLL_INTERVAL_MS = 1_000;
/** A poll or a rebalance call that has not answered by then is abandoned (the next poll tries again). */
const REQUEST_TIMEOUT_MS = 10_000;
/** Records/s is measured over the polls of about this long, so one slow poll does not make it jump. */
const RATE_WINDOW_MS = 5_000;
/** The sparkline of a table's records/s spans the polls of this long. */
const SPARKLINE_WINDOW_MS = 5 * 60_000;
/** Polls kept for the sparklines: a poll a second over the window, and a few to spare. */
const HISTORY_POLLS_MAX = SPARKLINE_WINDOW_MS / POLL_INTERVAL_MS + 10;
const SPARKLINE_WIDTH = 120;
const SPARKLINE_HEIGHT = 24;
const SVG_NAMESPACE = 'http://www.w3.org/2000/svg';
/** How long a bucket whose leader changed stays marked as moved. */
const MOVED_MARK_MS = 10_000;
const TOKEN_KEY = 'mink.console.token';
/** Kafka consumer groups are asked for at most this often (every coordinator reads its committed offsets for it). */
const GROUPS_POLL_INTERVAL_MS = 5_000;
/** How many of a bucket's newest records the recent-records preview shows. */
const RECENT_RECORDS = 20;
/** The location hash that names the selected table, so a reload or a shared link shows the same table. */
const SELECTED_HASH_PREFIX = '#table=';

interface TableSummary {
  name: string;
  kind: string;
  buckets: number;
  partition?: { column: string; unit: string };
  partitions?: string[];
  properties?: Record<string, string>;
}

/** A consumer group as `GET /v1/kafka/groups` reports it. */
interface KafkaGroup {
  group: string;
  state: string;
  members: number;
  lag: number;
  partitions: { topic: string; partition: number; committedOffset: number; endOffset: number | null; lag: number | null }[];
}

/** The `lake` of `GET /v1/tables/{name}`: the last committed round and the one running. */
interface LakeDescription {
  snapshotId: string | number | null;
  tieredAt: string | null;
  tieringEpoch: number;
  round: { worker: string; startedAt: string } | null;
}

interface RebalanceMove {
  table: string;
  partition?: string;
  bucket: number;
  from: string | null;
  to: string;
}

/** An answer of the API that was not a success: its status and the `{error:{code, message}}` it carried. */
class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

function element<T extends HTMLElement = HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (found === null) throw new Error(`the page has no #${id}`);
  return found as T;
}

/** A new element with text content (never parsed as HTML) and attributes. */
function make(tag: string, text = '', attributes: Record<string, string> = {}): HTMLElement {
  const created = document.createElement(tag);
  created.textContent = text;
  for (const [name, value] of Object.entries(attributes)) created.setAttribute(name, value);
  return created;
}

/** A table row of cells, each given as its text and the field name tests and styles find it by. */
function row(cells: [field: string, text: string][], attributes: Record<string, string> = {}): HTMLTableRowElement {
  const created = make('tr', '', attributes) as HTMLTableRowElement;
  for (const [field, text] of cells) created.append(make('td', text, { 'data-field': field }));
  return created;
}

async function callApi<T>(method: 'GET' | 'POST', path: string): Promise<T> {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const response = await fetch(path, {
    method,
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    cache: 'no-store',
  });
  const text = await response.text();
  let body: unknown = null;
  try {
    body = text === '' ? null : JSON.parse(text);
  } catch {
    // Not JSON (a proxy's error page): the status says enough.
  }
  if (!response.ok) {
    const error = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
    throw new ApiError(response.status, typeof error?.code === 'string' ? error.code : `HTTP ${response.status}`, typeof error?.message === 'string' ? error.message : text.slice(0, 200));
  }
  return body as T;
}

class ConsolePage {
  /** Polls of about the last RATE_WINDOW_MS, oldest first. */
  private samples: ClusterSample[] = [];
  /** Polls of the last SPARKLINE_WINDOW_MS (at most HISTORY_POLLS_MAX), oldest first: the sparklines' data. */
  private history: ClusterSample[] = [];
  /** Buckets whose leader changed, and until when (performance.now() ms) they stay marked. */
  private readonly moved = new Map<string, number>();
  private pollTimer: ReturnType<typeof setTimeout> | null = null;
  /** The table whose buckets the page lists (null: none), and its buckets at the last poll that listed them. */
  private selected: string | null = selectedInHash();
  private selectedBuckets: BucketStatus[] | null = null;
  /** Whether the selected table is a Kafka topic (its records are shown as key, value and headers). */
  private selectedIsTopic = false;
  /** What the recent-records preview shows now (bucket key and end offset), so an unchanged bucket is not scanned again. */
  private recentShown: string | null = null;
  /** When the consumer groups were last asked for (performance.now() ms); they are asked with the poll after GROUPS_POLL_INTERVAL_MS. */
  private groupsPolledAtMs = -Infinity;
  /** True while the selected table's lake description is being asked for. */
  private lakeDetailAsked = false;
  /** Increases with every preview scan: the answer of an older one is dropped. */
  private recentScans = 0;

  start(): void {
    element<HTMLFormElement>('token-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const input = element<HTMLInputElement>('token-input');
      const token = input.value.trim();
      if (token === '') return;
      sessionStorage.setItem(TOKEN_KEY, token);
      input.value = '';
      this.groupsPolledAtMs = -Infinity;
      this.hideTokenForm();
      this.pollSoon(0);
    });
    element('token-forget').addEventListener('click', () => {
      sessionStorage.removeItem(TOKEN_KEY);
      this.showTokenForm('Token forgotten. Enter a token to go on.');
    });
    element('rebalance-preview').addEventListener('click', () => void this.previewRebalance());
    element('rebalance-apply').addEventListener('click', () => void this.applyRebalance());
    element('rebalance-cancel').addEventListener('click', () => this.closeRebalance('Rebalance cancelled: nothing moved.'));
    element('token-forget').hidden = sessionStorage.getItem(TOKEN_KEY) === null;
    element('tables-body').addEventListener('click', (event) => {
      const button = (event.target as HTMLElement).closest('button[data-select]');
      if (button !== null) this.select(button.getAttribute('data-select'));
    });
    element('buckets-close').addEventListener('click', () => this.select(null));
    element('recent-bucket').addEventListener('change', () => this.refreshRecent());
    this.pollSoon(0);
  }

  /** Shows the buckets of `table` (null: of none) from the next poll on, which starts now. */
  private select(table: string | null): void {
    this.selected = table;
    this.selectedBuckets = null;
    this.recentShown = null;
    element('recent-bucket').replaceChildren();
    element('recent-body').replaceChildren();
    history.replaceState(null, '', table === null ? location.pathname : `${SELECTED_HASH_PREFIX}${encodeURIComponent(table)}`);
    this.pollSoon(0);
  }

  private pollSoon(delayMs: number): void {
    if (this.pollTimer !== null) clearTimeout(this.pollTimer);
    this.pollTimer = setTimeout(() => void this.poll(), delayMs);
  }

  private async poll(): Promise<void> {
    this.pollTimer = null;
    const selected = this.selected;
    try {
      const cluster = selected === null ? '/v1/cluster?buckets=false' : `/v1/cluster?table=${encodeURIComponent(selected)}`;
      const groupsDue = performance.now() - this.groupsPolledAtMs >= GROUPS_POLL_INTERVAL_MS;
      if (groupsDue) {
        this.groupsPolledAtMs = performance.now();
        void this.pollGroups();
      }
      const [status, tables] = await Promise.all([callApi<ClusterStatus>('GET', cluster), callApi<{ tables: TableSummary[] }>('GET', '/v1/tables')]);
      // A selection changed while the poll was out: its answer is of the table no longer selected.
      if (selected === this.selected) {
        this.draw({ atMs: performance.now(), status }, tables.tables);
        this.say('status', `Updated ${new Date().toLocaleTimeString()}`, 'ok');
      }
    } catch (error) {
      if (this.needsToken(error)) return;
      if (error instanceof ApiError && error.status === 404 && selected !== null && selected === this.selected) {
        // The selected table was dropped: show the cluster without it.
        this.select(null);
        return;
      }
      this.say('status', `Not updated: ${describe(error)}`, 'error');
    }
    this.pollSoon(POLL_INTERVAL_MS);
  }

  /** Asks for the consumer groups and draws them; a failure is said in their section (the next poll after the interval asks again). */
  private async pollGroups(): Promise<void> {
    try {
      const answer = await callApi<{ groups: KafkaGroup[]; unavailableBuckets: number; truncated: boolean }>('GET', '/v1/kafka/groups');
      this.drawGroups(answer.groups);
      const missing = answer.unavailableBuckets > 0 ? ` Some groups may be missing: ${answer.unavailableBuckets} coordinator bucket(s) did not answer.` : '';
      const cut = answer.truncated ? ' The list was cut at the committed offsets a coordinator lists at most.' : '';
      const count = answer.groups.length === 0 ? 'No consumer group has members or committed offsets.' : `${answer.groups.length} group(s).`;
      element('groups-table').hidden = answer.groups.length === 0;
      this.say('groups-message', `${count}${missing}${cut}`, missing === '' && cut === '' ? 'ok' : 'error');
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) return;
      this.say('groups-message', `Not updated: ${describe(error)}`, 'error');
    }
  }

  /** One row per group and partition (one row for a group without commits), each group's first row with its state, members and total lag. */
  private drawGroups(groups: readonly KafkaGroup[]): void {
    element('groups-body').replaceChildren(
      ...groups.flatMap((group) => {
        const partitions = group.partitions.length > 0 ? group.partitions : [null];
        return partitions.map((partition, index) =>
          row(
            [
              ['group', index === 0 ? group.group : ''],
              ['state', index === 0 ? group.state : ''],
              ['members', index === 0 ? String(group.members) : ''],
              ['total-lag', index === 0 ? formatCount(group.lag) : ''],
              ['topic', partition?.topic ?? ''],
              ['partition', partition === null ? '' : String(partition.partition)],
              ['committed', partition === null ? '' : formatCount(partition.committedOffset)],
              ['end', partition?.endOffset == null ? '' : formatCount(partition.endOffset)],
              ['lag', partition?.lag == null ? '' : formatCount(partition.lag)],
            ],
            {
              'data-group': group.group,
              'data-group-partition': partition === null ? '' : `${group.group}/${partition.topic}/${partition.partition}`,
              class: [index === 0 ? 'group-first' : '', partition?.lag ? 'lagging' : ''].filter((name) => name !== '').join(' '),
            },
          ),
        );
      }),
    );
  }

  /** True, and the token form shown, when `error` is the gateway asking for a (valid) token: polling waits for one. */
  private needsToken(error: unknown): boolean {
    if (!(error instanceof ApiError) || error.status !== 401) return false;
    this.showTokenForm(sessionStorage.getItem(TOKEN_KEY) === null ? 'This gateway asks for a bearer token.' : 'The gateway did not accept that token.');
    return true;
  }

  private showTokenForm(message: string): void {
    element('token-panel').hidden = false;
    element('token-message').textContent = message;
    element('token-forget').hidden = true;
    element<HTMLInputElement>('token-input').focus();
  }

  private hideTokenForm(): void {
    element('token-panel').hidden = true;
    element('token-forget').hidden = false;
  }

  private draw(sample: ClusterSample & { status: ClusterStatus }, tables: TableSummary[]): void {
    const { status } = sample;
    const nowMs = sample.atMs;
    const buckets = status.buckets ?? [];
    for (const key of movedBuckets(this.selectedBuckets, buckets)) this.moved.set(key, nowMs + MOVED_MARK_MS);
    for (const [key, untilMs] of this.moved) if (untilMs <= nowMs) this.moved.delete(key);
    this.selectedBuckets = status.buckets ?? null;
    this.samples.push(sample);
    while (this.samples.length > 2 && nowMs - this.samples[1]!.atMs >= RATE_WINDOW_MS) this.samples.shift();
    const earlier = this.samples.slice(0, -1);
    this.history.push(sample);
    while (this.history.length > HISTORY_POLLS_MAX || (this.history.length > 0 && this.history[0]!.atMs < nowMs - SPARKLINE_WINDOW_MS - POLL_INTERVAL_MS)) this.history.shift();

    element('coordinator').textContent = status.coordinator.node === null ? 'none yet' : `${status.coordinator.node} (epoch ${status.coordinator.epoch})`;
    element('coordinator').setAttribute('data-coordinator', status.coordinator.node ?? '');
    element('coordinator').setAttribute('data-epoch', String(status.coordinator.epoch));
    const states = status.bucketStates;
    element('bucket-states').textContent = `Buckets: ${formatCount(states.open)} open, ${formatCount(states.opening)} opening, ${formatCount(states.unavailable)} unavailable`;
    element('bucket-states').className = states.unavailable > 0 ? 'error' : 'ok';

    element('nodes-body').replaceChildren(
      ...status.nodes.map((node) =>
        row(
          [
            ['id', node.id],
            ['live', node.live ? 'live' : 'dead'],
            ['epoch', String(node.epoch)],
            ['buckets', String(node.buckets)],
            ['kafka', node.kafka],
            ['http', node.http],
          ],
          { 'data-node': node.id, class: node.live ? 'live' : 'dead' },
        ),
      ),
    );

    // The sparklines span the polls kept: the last SPARKLINE_WINDOW_MS, or since the page opened when that is less.
    const spanMs = Math.min(SPARKLINE_WINDOW_MS, Math.max(POLL_INTERVAL_MS, nowMs - this.history[0]!.atMs));
    const summaries = new Map(tables.map((table) => [table.name, table]));
    const totals = new Map(status.tables.map((table) => [table.table, table]));
    // The lake's age is on the clock of the tiering worker that stamped it: the page compares it with its own.
    const epochNowMs = Date.now();
    element('tables-body').replaceChildren(
      ...tableFigures(earlier, sample).map((figures) => {
        const summary = summaries.get(figures.table);
        const freshnessMs = durationTextMs(summary?.properties?.['table.datalake.freshness'] ?? '') ?? LAKE_FRESHNESS_DEFAULT_MS;
        const lake = lakeFreshness(totals.get(figures.table)!, epochNowMs, freshnessMs);
        const partitions = summary?.partition ? `, ${summary.partitions?.length ?? 0} ${summary.partition.unit} partitions` : '';
        const created = row(
          [
            ['name', ''],
            ['kind', summary?.kind ?? ''],
            ['buckets', `${figures.buckets}${partitions}`],
            ['records', formatCount(figures.records)],
            ['rate', formatRate(figures.recordsPerSecond)],
            ['trend', ''],
            ['bytes', formatBytes(figures.bytes)],
            ['lake', formatLake(figures.lakeOffset, lake, freshnessMs)],
          ],
          { 'data-table': figures.table, class: [figures.table === this.selected ? 'selected' : '', lake?.stale ? 'lake-stale' : ''].filter((name) => name !== '').join(' ') },
        );
        created.querySelector('td[data-field="trend"]')!.append(sparkline(throughputSeries(this.history, figures.table, SPARKLINE_WINDOW_MS), nowMs, spanMs));
        // The name is a button that selects the table: its buckets are listed below.
        created.querySelector('td[data-field="name"]')!.append(make('button', figures.table, { type: 'button', 'data-select': figures.table, title: 'Show this table’s buckets' }));
        return created;
      }),
    );
    element('tables-empty').hidden = status.tables.length > 0;

    element('buckets-panel').hidden = this.selected === null;
    element('buckets-table').textContent = this.selected ?? '';
    const live = new Set(status.nodes.filter((node) => node.live).map((node) => node.id));
    element('buckets-body').replaceChildren(
      ...buckets.map((bucket) => {
        const key = bucketKey(bucket);
        const classes = [bucket.state, this.moved.has(key) ? 'moved' : '', bucket.leader !== null && !live.has(bucket.leader) ? 'leader-dead' : ''].filter((name) => name !== '');
        return row(
          [
            ['table', bucket.table],
            ['partition', bucket.partition ?? ''],
            ['bucket', String(bucket.bucket)],
            ['leader', bucket.leader ?? 'none'],
            ['leader-epoch', String(bucket.leaderEpoch)],
            ['stream-epoch', String(bucket.streamEpoch)],
            ['state', bucket.state],
            ['offsets', `${formatCount(bucket.startOffset)}–${formatCount(bucket.endOffset)}`],
            ['bytes', formatBytes(bucket.bytes)],
            ['lake', bucket.lakeOffset === undefined ? '' : formatCount(bucket.lakeOffset)],
          ],
          { 'data-bucket': key, class: classes.join(' ') },
        );
      }),
    );
    this.selectedIsTopic = summaries.get(this.selected ?? '')?.properties?.['table.log.format'] === 'kafka';
    const selectedTotals = totals.get(this.selected ?? '');
    element('lake-detail').hidden = selectedTotals?.lakeOffset === undefined;
    if (selectedTotals?.lakeOffset !== undefined) void this.refreshLakeDetail(selectedTotals.table);
    this.drawRecentChoices(buckets);
    this.refreshRecent();
  }

  /**
   * The selected table's lake as GET /v1/tables/{name} describes it: the snapshot of the last round, when it
   * committed, and the round running now (its worker and start), if any. One request at a time.
   */
  private async refreshLakeDetail(table: string): Promise<void> {
    if (this.lakeDetailAsked) return;
    this.lakeDetailAsked = true;
    try {
      const described = await callApi<{ lake?: LakeDescription }>('GET', `/v1/tables/${encodeURIComponent(table)}`);
      if (table !== this.selected || described.lake === undefined) return;
      const lake = described.lake;
      const nowMs = Date.now();
      const last = lake.tieredAt === null ? 'no round committed yet' : `last round committed ${formatAge(Math.max(0, nowMs - Date.parse(lake.tieredAt)))} ago (snapshot ${lake.snapshotId ?? 'none'}, tiering epoch ${lake.tieringEpoch})`;
      const running = lake.round === null ? 'no round running' : `a round by ${lake.round.worker} running for ${formatAge(Math.max(0, nowMs - Date.parse(lake.round.startedAt)))}`;
      this.say('lake-detail', `Lake: ${last}; ${running}.`, 'ok');
    } catch (error) {
      if (table === this.selected) this.say('lake-detail', `Lake: not updated: ${describe(error)}`, 'error');
    } finally {
      this.lakeDetailAsked = false;
    }
  }

  /** The preview's bucket choices: every bucket of the selected table, the one chosen kept (else the first that stores records). */
  private drawRecentChoices(buckets: readonly BucketStatus[]): void {
    const select = element<HTMLSelectElement>('recent-bucket');
    const keys = buckets.map((bucket) => bucketKey(bucket));
    const current = [...select.options].map((option) => option.value);
    if (keys.length !== current.length || keys.some((key, index) => key !== current[index])) {
      const chosen = select.value;
      select.replaceChildren(...buckets.map((bucket) => make('option', bucket.partition === undefined ? `bucket ${bucket.bucket}` : `partition ${bucket.partition} bucket ${bucket.bucket}`, { value: bucketKey(bucket) })));
      const withRecords = buckets.find((bucket) => bucket.endOffset > bucket.startOffset);
      select.value = keys.includes(chosen) ? chosen : withRecords !== undefined ? bucketKey(withRecords) : (keys[0] ?? '');
    }
  }

  /**
   * Scans the newest records of the bucket chosen for the preview, when its end offset moved since they
   * were shown (or another bucket was chosen). The answer is drawn unless a newer scan was started meanwhile.
   */
  private refreshRecent(): void {
    const table = this.selected;
    const key = element<HTMLSelectElement>('recent-bucket').value;
    const bucket = this.selectedBuckets?.find((candidate) => bucketKey(candidate) === key);
    if (table === null || bucket === undefined) return;
    const shown = `${key}@${bucket.startOffset}-${bucket.endOffset}`;
    if (shown === this.recentShown) return;
    this.recentShown = shown;
    const scan = recentScanOf(bucket, RECENT_RECORDS);
    const scanNumber = ++this.recentScans;
    if (scan === null) {
      element('recent-body').replaceChildren();
      this.say('recent-message', 'This bucket stores no records.', 'ok');
      return;
    }
    const partition = bucket.partition === undefined ? '' : `&partition=${encodeURIComponent(bucket.partition)}`;
    const path = `/v1/tables/${encodeURIComponent(table)}/scan?bucket=${bucket.bucket}&offset=${scan.offset}&limit=${scan.limit}${partition}`;
    const topic = this.selectedIsTopic;
    callApi<{ records: ScannedRecord[] }>('GET', path).then(
      (answer) => {
        if (scanNumber !== this.recentScans) return;
        element('recent-body').replaceChildren(
          ...answer.records.map((record) =>
            row(
              [
                ['offset', String(record.offset)],
                ['time', new Date(record.timestamp).toISOString()],
                ['change', record.changeType ?? ''],
                ['row', rowText(record.row, topic)],
              ],
              { 'data-record': `${key}@${record.offset}` },
            ),
          ),
        );
        this.say('recent-message', `The last ${answer.records.length} record(s) of ${bucket.partition === undefined ? '' : `partition ${bucket.partition} `}bucket ${bucket.bucket}, newest last.`, 'ok');
      },
      (error: unknown) => {
        if (scanNumber !== this.recentScans) return;
        // Scanned again at the next poll.
        this.recentShown = null;
        this.say('recent-message', `Could not read the records: ${describe(error)}`, 'error');
      },
    );
  }

  private async previewRebalance(): Promise<void> {
    this.say('rebalance-message', 'Asking for a plan (dry run)…', 'ok');
    element('rebalance-plan').hidden = true;
    element('rebalance-moves').replaceChildren();
    try {
      const plan = await callApi<{ moves: RebalanceMove[] }>('POST', '/v1/cluster/rebalance?dryRun=true');
      const moves = element('rebalance-moves');
      moves.replaceChildren(
        ...plan.moves.map((move) =>
          row(
            [
              ['table', move.table],
              ['partition', move.partition ?? ''],
              ['bucket', String(move.bucket)],
              ['from', move.from ?? 'none'],
              ['to', move.to],
            ],
            { 'data-move': bucketKey(move) },
          ),
        ),
      );
      element('rebalance-plan').hidden = plan.moves.length === 0;
      this.say('rebalance-message', plan.moves.length === 0 ? 'Dry run: the buckets are balanced, nothing to move.' : `Dry run: ${plan.moves.length} bucket(s) would move. Nothing has moved yet.`, 'ok');
    } catch (error) {
      this.sayCallError(error, 'rebalance-message');
    }
  }

  private async applyRebalance(): Promise<void> {
    this.say('rebalance-message', 'Rebalancing…', 'ok');
    try {
      // The coordinator plans again from its current view: the moves carried out may differ from the preview.
      const done = await callApi<{ moves: RebalanceMove[] }>('POST', '/v1/cluster/rebalance?dryRun=false');
      this.closeRebalance(`Rebalanced: ${done.moves.length} bucket(s) moved.`);
      this.pollSoon(0);
    } catch (error) {
      this.sayCallError(error, 'rebalance-message');
    }
  }

  private closeRebalance(message: string): void {
    element('rebalance-plan').hidden = true;
    element('rebalance-moves').replaceChildren();
    this.say('rebalance-message', message, 'ok');
  }

  private sayCallError(error: unknown, where: string): void {
    if (this.needsToken(error)) {
      this.say(where, 'A token is needed first.', 'error');
      return;
    }
    const denied = error instanceof ApiError && error.status === 403;
    this.say(where, denied ? `Refused: ${describe(error)} (a rebalance needs a token with the admin scope)` : `Failed: ${describe(error)}`, 'error');
  }

  private say(where: string, text: string, kind: 'ok' | 'error'): void {
    const target = element(where);
    target.textContent = text;
    target.className = kind;
  }
}

/**
 * An inline SVG of a table's records/s over the `spanMs` up to `endMs`, built with DOM calls (no markup is
 * parsed). `data-points` and `data-peak` say what it draws; its title gives the span and the peak.
 */
function sparkline(series: readonly ThroughputPoint[], endMs: number, spanMs: number): SVGSVGElement {
  const peak = Math.max(0, ...series.map((point) => point.recordsPerSecond));
  const svg = document.createElementNS(SVG_NAMESPACE, 'svg');
  for (const [name, value] of Object.entries({ class: 'sparkline', width: String(SPARKLINE_WIDTH), height: String(SPARKLINE_HEIGHT), viewBox: `0 0 ${SPARKLINE_WIDTH} ${SPARKLINE_HEIGHT}`, 'data-points': String(series.length), 'data-peak': String(peak) })) {
    svg.setAttribute(name, value);
  }
  const title = document.createElementNS(SVG_NAMESPACE, 'title');
  title.textContent = series.length === 0 ? 'records/s: no two polls yet' : `records/s over the last ${formatAge(spanMs)}, peak ${formatRate(peak)}`;
  const line = document.createElementNS(SVG_NAMESPACE, 'polyline');
  // Drawn inside the box: a line along the bottom or top edge would be cut in half.
  line.setAttribute('points', sparklinePoints(series, endMs, spanMs, SPARKLINE_WIDTH, SPARKLINE_HEIGHT - 2));
  line.setAttribute('transform', 'translate(0 1)');
  svg.append(title, line);
  return svg;
}

/** The table the location hash names (`#table=<name>`), or null. */
function selectedInHash(): string | null {
  if (!location.hash.startsWith(SELECTED_HASH_PREFIX)) return null;
  try {
    const name = decodeURIComponent(location.hash.slice(SELECTED_HASH_PREFIX.length));
    return name === '' ? null : name;
  } catch {
    return null;
  }
}

function describe(error: unknown): string {
  if (error instanceof ApiError) return `${error.code}: ${error.message}`;
  if (error instanceof Error) return error.name === 'TimeoutError' ? `no answer within ${REQUEST_TIMEOUT_MS / 1000} s` : error.message;
  return String(error);
}

new ConsolePage().start();
