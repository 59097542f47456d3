/**
 * The web console's views of a table's data in headless Chromium against a real local cluster (one data
 * node, tokens asked for; the page reads with a token of the `read` scope): the recent records of a Kafka
 * topic produced with kafkajs, shown as the records written (key, value and headers as text) and as the
 * scan API returns them; Kafka consumer groups (one whose offsets an admin set, one consuming with kafkajs)
 * with the lag of each partition, equal to end − committed as GET /v1/kafka/groups reports them; the
 * records/s sparkline of a table appended to while the page polls; and that table's lake freshness once
 * tiered (records held, none behind, the last round's age; the round in the selected table's panel).
 * MINK_CONSOLE_SCREENSHOT=docs/console.png also writes docs/console-*.png beside it (otherwise they go to the
 * test's temporary folder, so a test run changes no tracked file).
 */
import { statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Kafka, logLevel, type SASLOptions } from 'kafkajs';
import { launch, type Browser, type Page } from 'puppeteer-core';
import { ENV } from '@mink/config';
import { LocalCluster } from '@mink/devcluster';
import { ONE_NODE_CLUSTER, eventually, http, kafkaBrokersOf, temporaryDirectory } from './helpers';

jest.setTimeout(240_000);

const CHROMIUM = process.env.MINK_CHROMIUM ?? '/usr/bin/chromium';
const TOKENS = { ops: { name: 'ops', token: 'console-data-admin-4f19c2', scopes: ['admin'] }, viewer: { name: 'viewer', token: 'console-data-viewer-83b7e0', scopes: ['read'] } };
const TOPIC = 'orders';
const PARTITIONS = 3;
const MESSAGES = 30;
/** The offsets an admin sets for the group `billing`, by partition (each partition ends at 10). */
const BILLING_OFFSETS = [3, 10, 0];
/** A table with a lake that the test appends to while the page polls. */
const TRIPS = 'trips';
const TRIPS_BATCHES = 3;
const TRIPS_ROWS_PER_BATCH = 50;

/** The rows of one of the page's tables by their `data-*` key, each with its cells by field. */
async function rowsOf(page: Page, body: string, keyAttribute: string): Promise<{ key: string; fields: Record<string, string> }[]> {
  return page.$$eval(
    `#${body} tr`,
    (rows, attribute) => rows.map((row) => ({ key: row.getAttribute(attribute) ?? '', fields: Object.fromEntries([...row.querySelectorAll('td')].map((cell) => [cell.getAttribute('data-field') ?? '', cell.textContent ?? ''])) })),
    keyAttribute,
  );
}

/** Message `index` of the test: its key and value, sent to partition index mod PARTITIONS. */
function message(index: number): { key: string; value: string; partition: number } {
  return { key: `k${index}`, value: JSON.stringify({ n: index, item: `<b>item ${index}</b>` }), partition: index % PARTITIONS };
}

describe('the web console’s data views on a real local cluster', () => {
  const directory = temporaryDirectory('console-data');
  const screenshots = process.env.MINK_CONSOLE_SCREENSHOT === undefined ? directory.path : dirname(resolve(process.env.MINK_CONSOLE_SCREENSHOT));
  let cluster: LocalCluster | null = null;
  let browser: Browser | null = null;

  afterAll(async () => {
    await browser?.close();
    await cluster?.stop();
    directory.remove();
  });

  it('shows a topic’s recent records as written, its consumer groups’ lag, a table’s throughput and its lake’s freshness', async () => {
    const tokensFile = join(directory.path, 'tokens.json');
    writeFileSync(tokensFile, JSON.stringify({ tokens: Object.values(TOKENS) }));
    cluster = await LocalCluster.start({ ...ONE_NODE_CLUSTER, dataDir: join(directory.path, 'cluster'), env: { [ENV.authTokensFile]: tokensFile } });
    const gateway = cluster.gatewayUrl;
    const api = (method: string, path: string, body?: unknown) => http(gateway, method, path, body, TOKENS.ops.token);
    const kafka = new Kafka({ brokers: kafkaBrokersOf(cluster), logLevel: logLevel.NOTHING, sasl: { mechanism: 'plain', username: TOKENS.ops.name, password: TOKENS.ops.token } as SASLOptions });

    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: PARTITIONS }], waitForLeaders: true });
    await admin.disconnect();
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: TOPIC, acks: -1, messages: Array.from({ length: MESSAGES }, (_, index) => message(index)) });
    await producer.disconnect();

    browser = await launch({ executablePath: CHROMIUM, headless: true, args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] });
    const page = await browser.newPage();
    await page.setViewport({ width: 1200, height: 900 });
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(String(error)));
    await page.goto(`${gateway}/console`);
    await page.waitForSelector('#token-panel:not([hidden])');
    await page.type('#token-input', TOKENS.viewer.token);
    await page.click('#token-form button[type=submit]');
    await page.waitForSelector(`#tables-body button[data-select="${TOPIC}"]`);
    await page.click(`#tables-body button[data-select="${TOPIC}"]`);

    // Recent records of partition 1: the messages written to it, in order, as text; the same records the scan API returns.
    await page.waitForSelector(`#recent-bucket option[value="${TOPIC}//1"]`);
    await page.select('#recent-bucket', `${TOPIC}//1`);
    const written = Array.from({ length: MESSAGES }, (_, index) => message(index)).filter((each) => each.partition === 1);
    const recent = await eventually('the recent records of partition 1', async () => {
      const rows = await rowsOf(page, 'recent-body', 'data-record');
      return rows.length === written.length && rows[0]!.key === `${TOPIC}//1@0` ? rows : undefined;
    });
    expect(recent.map((row) => [row.fields.offset, row.fields.row])).toEqual(written.map((each, offset) => [String(offset), JSON.stringify({ key: each.key, value: each.value, headers: [] })]));
    const scanned = (await api('GET', `/v1/tables/${TOPIC}/scan?bucket=1&offset=0&limit=20`)).body;
    expect(recent.map((row) => [row.fields.offset, row.fields.time])).toEqual(scanned.records.map((record: any) => [String(record.offset), new Date(record.timestamp).toISOString()]));
    // Names and values went in as text: the markup in the values is shown, not parsed.
    expect(await page.$$eval('#recent-body b', (bold) => bold.length)).toBe(0);
    const recentShot = join(screenshots, 'console-recent-records.png');
    await (await page.$('#buckets-panel'))!.screenshot({ path: recentShot as `${string}.png` });
    expect(statSync(recentShot).size).toBeGreaterThan(0);

    // Consumer groups: `billing` with offsets set by an admin (no members), `audit` consuming everything with kafkajs.
    const groupsAdmin = kafka.admin();
    await groupsAdmin.connect();
    await groupsAdmin.setOffsets({ groupId: 'billing', topic: TOPIC, partitions: BILLING_OFFSETS.map((offset, partition) => ({ partition, offset: String(offset) })) });
    await groupsAdmin.disconnect();
    const consumer = kafka.consumer({ groupId: 'audit' });
    await consumer.connect();
    await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
    await consumer.run({ eachMessage: async () => undefined });
    try {
      const groups = await eventually('both groups with their offsets, audit consumed all and stable', async () => {
        const answer = (await http(gateway, 'GET', '/v1/kafka/groups', undefined, TOKENS.viewer.token)).body;
        const audit = answer.groups?.find((group: any) => group.group === 'audit');
        return answer.groups?.length === 2 && audit.state === 'Stable' && audit.partitions.length === PARTITIONS && audit.lag === 0 ? answer : undefined;
      }, 60_000);
      expect(groups.unavailableBuckets).toBe(0);
      expect(groups.groups.map((group: any) => [group.group, group.state, group.members, group.lag])).toEqual([
        ['audit', 'Stable', 1, 0],
        ['billing', 'Empty', 0, 17],
      ]);
      const perPartition = MESSAGES / PARTITIONS;
      expect(groups.groups[1].partitions).toEqual(BILLING_OFFSETS.map((committedOffset, partition) => ({ topic: TOPIC, partition, committedOffset, endOffset: perPartition, lag: perPartition - committedOffset })));
      // One group by its id; a bad query is a 400.
      expect((await http(gateway, 'GET', '/v1/kafka/groups?group=billing', undefined, TOKENS.viewer.token)).body.groups).toEqual([groups.groups[1]]);
      const refused = await http(gateway, 'GET', '/v1/kafka/groups?group=', undefined, TOKENS.viewer.token);
      expect([refused.status, refused.body.error?.code]).toEqual([400, 'InvalidArgument']);

      // The page shows each group's partitions with the committed offset, the end and the lag the API reports.
      const shownGroups = await eventually('the page showing both groups', async () => {
        const rows = await rowsOf(page, 'groups-body', 'data-group-partition');
        return rows.length === 2 * PARTITIONS && rows.find((row) => row.key === `audit/${TOPIC}/0`)?.fields.lag === '0' ? rows : undefined;
      }, 30_000);
      const expected = groups.groups.flatMap((group: any) => group.partitions.map((partition: any) => [`${group.group}/${partition.topic}/${partition.partition}`, String(partition.committedOffset), String(partition.endOffset), String(partition.endOffset - partition.committedOffset)]));
      expect(shownGroups.map((row) => [row.key, row.fields.committed, row.fields.end, row.fields.lag])).toEqual(expected);
      expect(shownGroups.filter((row) => row.fields.group !== '').map((row) => [row.fields.group, row.fields.state, row.fields.members, row.fields['total-lag']])).toEqual([
        ['audit', 'Stable', '1', '0'],
        ['billing', 'Empty', '0', '17'],
      ]);
      const groupsShot = join(screenshots, 'console-groups.png');
      await (await page.$('#groups-section'))!.screenshot({ path: groupsShot as `${string}.png` });
      expect(statSync(groupsShot).size).toBeGreaterThan(0);
    } finally {
      await consumer.disconnect();
    }

    // Appends to a table while the page polls: its sparkline draws non-zero records/s.
    expect((await api('POST', '/v1/tables', { name: TRIPS, columns: [{ name: 'id', type: 'int64' }], bucketKey: ['id'], buckets: 2, properties: { 'table.datalake.enabled': 'true', 'table.datalake.freshness': '1s' } })).status).toBe(201);
    await page.waitForSelector(`#tables-body tr[data-table="${TRIPS}"] svg.sparkline`);
    for (let batch = 0; batch < TRIPS_BATCHES; batch++) {
      const appended = await eventually('an append to trips', async () => {
        const response = await api('POST', `/v1/tables/${TRIPS}/append`, { rows: Array.from({ length: TRIPS_ROWS_PER_BATCH }, (_, index) => ({ id: batch * TRIPS_ROWS_PER_BATCH + index })) });
        return response.status === 200 ? response : undefined;
      });
      expect(appended.body.appended).toBe(TRIPS_ROWS_PER_BATCH);
      await new Promise((resolve) => setTimeout(resolve, 1_200));
    }
    const drawn = await eventually('a sparkline of trips with non-zero points', async () => {
      const line = await page.$eval(`#tables-body tr[data-table="${TRIPS}"] svg.sparkline`, (svg) => ({
        points: Number(svg.getAttribute('data-points')),
        peak: Number(svg.getAttribute('data-peak')),
        ys: (svg.querySelector('polyline')?.getAttribute('points') ?? '').split(' ').filter((point: string) => point !== '').map((point: string) => Number(point.split(',')[1])),
        height: Number(svg.getAttribute('height')),
      }));
      return line.peak > 0 && line.ys.some((y: number) => y < line.height - 2) ? line : undefined;
    });
    expect(drawn.ys).toHaveLength(drawn.points);
    // The peak is a rate of these appends: at most every row in the shortest poll interval, never more than were written.
    expect(drawn.peak).toBeLessThanOrEqual(TRIPS_BATCHES * TRIPS_ROWS_PER_BATCH * 10);

    // Lake freshness: once a round tiered every record, the page shows what the lake holds, none behind, and the round's age.
    const rows = TRIPS_BATCHES * TRIPS_ROWS_PER_BATCH;
    const tiered = await eventually('trips tiered into the lake', async () => {
      const described = (await api('GET', `/v1/tables/${TRIPS}`)).body;
      const held = (described.lake?.offsets ?? []).reduce((sum: number, bucket: any) => sum + bucket.offset, 0);
      return held === rows && described.lake.tieredAt !== null ? described : undefined;
    }, 60_000);
    const lakeCell = await eventually('the page showing trips tiered', async () => {
      const text = await page.$eval(`#tables-body tr[data-table="${TRIPS}"] td[data-field="lake"]`, (cell) => cell.textContent ?? '');
      return text.startsWith(`${rows} (0 behind), tiered `) ? text : undefined;
    });
    expect(lakeCell).toMatch(/^150 \(0 behind\), tiered \d+ s ago, target 1 s$/);
    // The age shown is the time since the API's tieredAt, within the polls and the test's own steps.
    const shownAgeMs = Number(/tiered (\d+) s ago/.exec(lakeCell)![1]) * 1000;
    expect(shownAgeMs).toBeLessThanOrEqual(Date.now() - Date.parse(tiered.lake.tieredAt) + 1_000);
    expect(await page.$eval(`#tables-body tr[data-table="${TRIPS}"]`, (row) => row.getAttribute('class') ?? '')).not.toContain('lake-stale');
    const tablesShot = join(screenshots, 'console-tables.png');
    await (await page.$('#tables-section'))!.screenshot({ path: tablesShot as `${string}.png` });
    expect(statSync(tablesShot).size).toBeGreaterThan(0);
    // The selected table's lake: its last round, from GET /v1/tables/{name}.
    await page.click(`#tables-body button[data-select="${TRIPS}"]`);
    const detail = await eventually('the lake detail of trips', async () => {
      const text = await page.$eval('#lake-detail', (paragraph) => (paragraph.hasAttribute('hidden') ? '' : (paragraph.textContent ?? '')));
      return text.startsWith('Lake: last round committed') ? text : undefined;
    });
    expect(detail).toMatch(/^Lake: last round committed \d+ s ago \(snapshot \S+, tiering epoch \d+\); (no round running|a round by \S+ running for \d+ s)\.$/);
    expect(pageErrors).toEqual([]);
  });
});
