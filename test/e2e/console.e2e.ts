/**
 * The web console in headless Chromium against a real local cluster (3 data nodes) whose gateway asks for
 * tokens: the page asks for a token, then shows the coordinator, the nodes, the table with its records and
 * every bucket with its leader as GET /v1/cluster reports them; after `kill -9` of a data node the page
 * shows it dead and its buckets led by live nodes (as the API says); once it is back, the rebalance
 * preview lists the dry run's moves and moves nothing, and confirming it moves those buckets to it.
 * Takes a screenshot of the page with the node dead; MINK_CONSOLE_SCREENSHOT=docs/console.png refreshes the
 * picture in docs/console.md (otherwise it goes to the test's temporary folder, so a test run changes no tracked file).
 */
import { statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { launch, type Browser, type Page } from 'puppeteer-core';
import { ENV } from '@mink/config';
import { LocalCluster } from '@mink/devcluster';
import { eventually, http, SHORT_LEASE_CLUSTER, temporaryDirectory } from './helpers';

jest.setTimeout(240_000);

/** The Debian package's browser (scripts/bootstrap.sh installs it); MINK_CHROMIUM names another. */
const CHROMIUM = process.env.MINK_CHROMIUM ?? '/usr/bin/chromium';
const ADMIN_TOKEN = 'console-admin-secret-7e1d04';
const TABLE = 'clicks';
const BUCKETS = 6;
const ROWS = 120;

/** A row of one of the page's tables: the key its `data-*` attribute gives, its classes, and its cells by field. */
interface PageRow {
  key: string;
  classes: string;
  fields: Record<string, string>;
}

async function rowsOf(page: Page, body: string, keyAttribute: string): Promise<PageRow[]> {
  return page.$$eval(
    `#${body} tr`,
    (rows, attribute) =>
      rows.map((row) => ({
        key: row.getAttribute(attribute) ?? '',
        classes: row.getAttribute('class') ?? '',
        fields: Object.fromEntries([...row.querySelectorAll('td')].map((cell) => [cell.getAttribute('data-field') ?? '', cell.textContent ?? ''])),
      })),
    keyAttribute,
  );
}

/**
 * What the page shows of the cluster, read from its DOM in one turn of the page's event loop: a redraw also
 * happens in one turn, so the parts never come from two redraws (read one by one, the coordinator could be
 * read before the first redraw and the tables after it).
 */
async function shown(page: Page): Promise<{ coordinator: { node: string | null; epoch: string | null }; nodes: PageRow[]; tables: PageRow[]; buckets: PageRow[] }> {
  return page.$eval('html', (root) => {
    const rows = (body: string, attribute: string) =>
      [...root.querySelectorAll(`#${body} tr`)].map((row) => ({
        key: row.getAttribute(attribute) ?? '',
        classes: row.getAttribute('class') ?? '',
        fields: Object.fromEntries([...row.querySelectorAll('td')].map((cell) => [cell.getAttribute('data-field') ?? '', cell.textContent ?? ''])),
      }));
    const coordinator = root.querySelector('#coordinator');
    return {
      coordinator: { node: coordinator?.getAttribute('data-coordinator') ?? null, epoch: coordinator?.getAttribute('data-epoch') ?? null },
      nodes: rows('nodes-body', 'data-node'),
      tables: rows('tables-body', 'data-table'),
      buckets: rows('buckets-body', 'data-bucket'),
    };
  });
}

/** The bucket leaders the API reports, by the key the page gives a bucket (table/partition/bucket). */
function leadersOf(status: any): Record<string, string | null> {
  return Object.fromEntries(status.buckets.map((bucket: any) => [`${bucket.table}/${bucket.partition ?? ''}/${bucket.bucket}`, bucket.leader]));
}

function shownLeaders(rows: PageRow[]): Record<string, string> {
  return Object.fromEntries(rows.map((row) => [row.key, row.fields.leader!]));
}

describe('the web console on a real local cluster', () => {
  const directory = temporaryDirectory('console');
  const screenshot = process.env.MINK_CONSOLE_SCREENSHOT === undefined ? join(directory.path, 'console.png') : resolve(process.env.MINK_CONSOLE_SCREENSHOT);
  let cluster: LocalCluster | null = null;
  let browser: Browser | null = null;

  afterAll(async () => {
    await browser?.close();
    await cluster?.stop();
    directory.remove();
  });

  it('shows nodes, tables and bucket leaders, follows a killed node’s buckets to live nodes, and previews a rebalance', async () => {
    const tokensFile = join(directory.path, 'tokens.json');
    writeFileSync(tokensFile, JSON.stringify({ tokens: [{ name: 'ops', token: ADMIN_TOKEN, scopes: ['admin'] }] }));
    // One coordinator is enough here and spares the machine's cores.
    cluster = await LocalCluster.start({ ...SHORT_LEASE_CLUSTER, coordinators: 1, dataDir: join(directory.path, 'cluster'), env: { [ENV.authTokensFile]: tokensFile } });
    const gateway = cluster.gatewayUrl;
    const api = (method: string, path: string, body?: unknown) => http(gateway, method, path, body, ADMIN_TOKEN);
    expect((await api('POST', '/v1/tables', { name: TABLE, columns: [{ name: 'id', type: 'int64' }], bucketKey: ['id'], buckets: BUCKETS })).status).toBe(201);
    const allOpen = (condition: (status: any) => boolean) =>
      eventually('every bucket open', async () => {
        const status = (await api('GET', '/v1/cluster')).body;
        return status.buckets.length === BUCKETS && status.buckets.every((bucket: any) => bucket.state === 'open') && condition(status) ? status : undefined;
      }, 60_000);
    await allOpen(() => true);
    expect((await api('POST', `/v1/tables/${TABLE}/append`, { rows: Array.from({ length: ROWS }, (_, id) => ({ id })) })).status).toBe(200);
    const before = await allOpen((status) => status.buckets.reduce((sum: number, bucket: any) => sum + bucket.endOffset, 0) === ROWS);

    browser = await launch({ executablePath: CHROMIUM, headless: true, args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] });
    const page = await browser.newPage();
    await page.setViewport({ width: 1200, height: 900 });
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(String(error)));
    const clusterCalls: string[] = [];
    page.on('request', (request) => {
      const url = new URL(request.url());
      if (url.pathname === '/v1/cluster') clusterCalls.push(url.search);
    });
    await page.goto(`${gateway}/console`);

    // The gateway asks for a token: the page says so and shows no cluster data until it has one.
    await page.waitForSelector('#token-panel:not([hidden])');
    expect(await page.$eval('#token-message', (element) => element.textContent)).toBe('This gateway asks for a bearer token.');
    expect((await shown(page)).nodes).toEqual([]);
    await page.type('#token-input', ADMIN_TOKEN);
    await page.click('#token-form button[type=submit]');
    // The buckets are listed for a selected table only: the page never asks for every bucket of the cluster.
    await page.waitForSelector(`#tables-body button[data-select="${TABLE}"]`);
    expect(await page.$eval('#buckets-panel', (panel) => panel.hasAttribute('hidden'))).toBe(true);
    await page.click(`#tables-body button[data-select="${TABLE}"]`);

    // Nodes, the coordinator, the table's records and every bucket's leader as the API reports them.
    const first = await eventually('the page showing the cluster', async () => {
      const state = await shown(page);
      return state.buckets.length === BUCKETS && state.tables.length === 1 ? state : undefined;
    });
    expect(first.coordinator).toEqual({ node: before.coordinator.node, epoch: String(before.coordinator.epoch) });
    expect(first.nodes.map((row) => [row.key, row.fields.live, row.fields.epoch, row.fields.buckets, row.fields.kafka])).toEqual(
      before.nodes.map((node: any) => [node.id, 'live', String(node.epoch), String(node.buckets), node.kafka]),
    );
    expect(first.tables[0]!.fields).toMatchObject({ name: TABLE, kind: 'log', buckets: String(BUCKETS), records: String(ROWS), lake: 'no lake' });
    expect(shownLeaders(first.buckets)).toEqual(leadersOf(before));
    expect(first.buckets.map((row) => [row.key, row.fields['leader-epoch'], row.fields['stream-epoch'], row.fields.state])).toEqual(
      before.buckets.map((bucket: any) => [`${TABLE}//${bucket.bucket}`, String(bucket.leaderEpoch), String(bucket.streamEpoch), 'open']),
    );

    // kill -9 of a node that leads buckets: the page shows it dead and its buckets led by live nodes.
    const victim = before.buckets[0].leader as string;
    const victimBuckets = before.buckets.filter((bucket: any) => bucket.leader === victim).map((bucket: any) => `${TABLE}//${bucket.bucket}`);
    cluster.kill('data-node', victim, 'SIGKILL');
    const afterKill = await eventually(
      `the page showing node ${victim} dead and its buckets moved`,
      async () => {
        const state = await shown(page);
        const victimRow = state.nodes.find((row) => row.key === victim);
        const moved = state.buckets.every((row) => row.fields.leader !== victim && row.fields.state === 'open');
        return victimRow?.fields.live === 'dead' && moved ? state : undefined;
      },
      60_000,
    );
    const failedOver = (await api('GET', '/v1/cluster')).body;
    expect(shownLeaders(afterKill.buckets)).toEqual(leadersOf(failedOver));
    expect(failedOver.nodes.find((node: any) => node.id === victim).live).toBe(false);
    for (const key of victimBuckets) expect(afterKill.buckets.find((row) => row.key === key)!.classes).toContain('moved');
    // A preview now: the live nodes share the buckets, so the dry run (as the API answers it) moves none or few.
    await page.click('#rebalance-preview');
    const whileDead = (await api('POST', '/v1/cluster/rebalance?dryRun=true')).body;
    await eventually('the preview while a node is dead', async () => ((await page.$eval('#rebalance-message', (element) => element.textContent)) ?? '').startsWith('Dry run:'));
    expect(await rowsOf(page, 'rebalance-moves', 'data-move')).toHaveLength(whileDead.moves.length);
    await page.screenshot({ path: screenshot as `${string}.png`, fullPage: true });
    expect(statSync(screenshot).size).toBeGreaterThan(0);

    // The node comes back with nothing to lead; the preview lists the dry run's moves and moves nothing.
    await cluster.restart('data-node', victim);
    await eventually(`the page showing node ${victim} live again`, async () => (await shown(page)).nodes.find((row) => row.key === victim)?.fields.live === 'live');
    await page.click('#rebalance-preview');
    await page.waitForSelector('#rebalance-plan:not([hidden])');
    const previewed = await rowsOf(page, 'rebalance-moves', 'data-move');
    const dryRun = (await api('POST', '/v1/cluster/rebalance?dryRun=true')).body;
    expect(dryRun.moves.length).toBeGreaterThan(0);
    expect(previewed.map((row) => row.fields)).toEqual(dryRun.moves.map((move: any) => ({ table: move.table, partition: '', bucket: String(move.bucket), from: move.from, to: move.to })));
    expect(await page.$eval('#rebalance-message', (element) => element.textContent)).toBe(`Dry run: ${dryRun.moves.length} bucket(s) would move. Nothing has moved yet.`);
    expect(leadersOf((await api('GET', '/v1/cluster')).body)).toEqual(leadersOf(failedOver));

    // Confirming carries it out: the moved buckets show the returned node as their leader.
    await page.click('#rebalance-apply');
    const rebalanced = await eventually('the page showing the rebalanced leaders', async () => {
      const state = await shown(page);
      return dryRun.moves.every((move: any) => state.buckets.find((row) => row.key === `${TABLE}//${move.bucket}`)?.fields.leader === victim) ? state : undefined;
    }, 60_000);
    expect(shownLeaders(rebalanced.buckets)).toEqual(leadersOf((await api('GET', '/v1/cluster')).body));
    expect(await page.$eval('#rebalance-message', (element) => element.textContent)).toMatch(/^Rebalanced: \d+ bucket\(s\) moved\.$/);
    expect(pageErrors).toEqual([]);
    // Every poll asked for the summary or for the selected table's buckets, never for the whole list.
    expect(new Set(clusterCalls)).toEqual(new Set(['?buckets=false', `?table=${TABLE}`]));
  });
});
