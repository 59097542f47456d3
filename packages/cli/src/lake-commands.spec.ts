import type { CliIo } from './io';
import { LAKE_DOWNLOADS_IN_FLIGHT, LAKE_PROGRESS_DELAY_MS, fetchAll } from './lake-commands';
import { run } from './program';

/**
 * The lake commands against a fake gateway and no S3: what they decide before they read a lake (a table
 * without one, a query that names none, bad SQL) and DuckDB itself, loaded with no extension to download.
 * Reading real lakes is tested end to end (test/e2e/cli-lake.e2e.ts).
 */
async function runWith(args: string[], tables: Record<string, unknown>): Promise<{ exitCode: number; stdout: string; stderr: string; paths: string[] }> {
  let stdout = '';
  let stderr = '';
  const paths: string[] = [];
  const io: CliIo = {
    writeOut: (text) => void (stdout += text),
    writeError: (text) => void (stderr += text),
    env: { MINK_GATEWAY_URL: 'http://gateway.test' },
    fetch: async (url) => {
      const path = String(url).replace('http://gateway.test', '');
      paths.push(path);
      if (path === '/v1/tables') return Response.json({ tables: Object.values(tables) });
      const name = decodeURIComponent(path.replace('/v1/tables/', ''));
      const table = tables[name];
      if (table === undefined) return Response.json({ error: { code: 'NotFound', message: `table '${name}' does not exist` } }, { status: 404 });
      return Response.json(table);
    },
    errorIsTerminal: false,
  };
  const exitCode = await run(args, io);
  return { exitCode, stdout, stderr, paths };
}

const PLAIN = { name: 'plain', columns: [{ name: 'id', type: 'int64' }], properties: {} };
const WAITING = { name: 'waiting', columns: [{ name: 'id', type: 'int64' }], properties: { 'table.datalake.enabled': 'true', 'table.datalake.freshness': '10m' } };
const TABLES = { plain: PLAIN, waiting: WAITING };

describe('mink lake files', () => {
  it.each<[string, string, string]>([
    ['a missing table', 'nope', "error: NotFound: table 'nope' does not exist\n"],
    ['a table with the lake off', 'plain', "error: table 'plain' has no lake: table.datalake.enabled is not true (mink table alter plain --property table.datalake.enabled=true)\n"],
    ['a table whose first round has not committed', 'waiting', "error: table 'waiting' has no lake yet: no tiering round has committed (rounds are due every 10m)\n"],
  ])('%s: exit 1 and one line', async (_name, table, expected) => {
    const result = await runWith(['lake', 'files', table], TABLES);
    expect(result).toMatchObject({ exitCode: 1, stdout: '', stderr: expected });
  });
});

describe('mink lake query', () => {
  it('answers a query that names no lake without reading S3', async () => {
    const result = await runWith(['lake', 'query', "select 42 as answer, 9007199254740993::BIGINT as big, 'x' as s, null as n"], TABLES);
    expect(result).toMatchObject({ exitCode: 0, stderr: '' });
    expect(result.stdout).toBe(['answer  big               s  n', '42      9007199254740993  x  NULL', '(1 row)', ''].join('\n'));
    expect(result.paths).toEqual(['/v1/tables']);
  });

  it('prints JSON Lines: BIGINT, HUGEINT and DECIMAL as strings, INTEGER and DOUBLE as numbers, timestamps in UTC', async () => {
    const result = await runWith(['lake', 'query', 'select range as i, range * 2 as twice from range(2)', '--json'], TABLES);
    expect(result).toMatchObject({ exitCode: 0, stdout: '{"i":"0","twice":"0"}\n{"i":"1","twice":"2"}\n' });
    const types = await runWith(
      ['lake', 'query', "select sum(2::BIGINT) as h, 1.5::DECIMAL(10,2) as d, 7::INTEGER as i, 2.5 :: DOUBLE as f, TIMESTAMPTZ '2026-12-07 01:02:03+01' as ts, true as t", '--json'],
      TABLES,
    );
    expect(types).toMatchObject({ exitCode: 0, stdout: '{"h":"2","d":"1.50","i":7,"f":2.5,"ts":"2026-12-07 00:02:03+00","t":true}\n' });
  });

  it.each<[string, string, string]>([
    ['bad SQL', 'selec 1', 'error: Parser Error: syntax error at or near "selec"\n'],
    [
      'a table without a lake',
      'select count(*) from waiting',
      "error: table 'waiting' has no lake yet: no tiering round has committed (rounds are due every 10m)\n",
    ],
    ['an extension it would have to download', "select * from read_parquet('s3://mink/x.parquet')", 'error: Missing Extension Error: File s3://mink/x.parquet requires the extension httpfs to be loaded\n'],
  ])('%s: exit 1 and one line', async (_name, sql, expected) => {
    const result = await runWith(['lake', 'query', sql], TABLES);
    expect(result).toMatchObject({ exitCode: 1, stdout: '', stderr: expected });
  });
});

describe('fetchAll', () => {
  // Proves that the data files are fetched a bounded number at a time, every one once, that progress
  // shows only once the fetch takes longer than LAKE_PROGRESS_DELAY_MS, and that a failure waits for the
  // fetches in flight (the temporary folder is removed only after them) and clears the progress line.
  const downloads = Array.from({ length: 10 }, (_, index) => ({ key: `k${index}`, path: `/tmp/${index}.parquet`, file: { recordCount: 100, fileSizeBytes: 1_000 } }));

  function harness(stepMs: number, failAt?: string) {
    let clock = 0;
    let inFlight = 0;
    let inFlightMax = 0;
    const fetched: string[] = [];
    const updates: number[] = [];
    let finished = 0;
    const fetchOne = async ({ key }: { key: string }): Promise<number> => {
      inFlight += 1;
      inFlightMax = Math.max(inFlightMax, inFlight);
      await new Promise((resolve) => setImmediate(resolve));
      clock += stepMs;
      inFlight -= 1;
      if (key === failAt) throw new Error(`cannot fetch ${key}`);
      fetched.push(key);
      return 1_000;
    };
    const reporter = { update: (progress: { rows: number }) => void updates.push(progress.rows), finish: () => void (finished += 1) };
    return { fetchOne, reporter, now: () => clock, state: () => ({ inFlightMax, inFlight, fetched, updates, finished }) };
  }

  it('fetches every file once, a bounded number at a time, and shows progress only after the delay', async () => {
    const { fetchOne, reporter, now, state } = harness(LAKE_PROGRESS_DELAY_MS / 4);
    const progress = await fetchAll(downloads, fetchOne, reporter, now);
    expect(progress).toMatchObject({ rows: 1_000, bytes: 10_000, totalBytes: 10_000 });
    expect([...state().fetched].sort()).toEqual(downloads.map((download) => download.key).sort());
    expect(state().inFlightMax).toBe(LAKE_DOWNLOADS_IN_FLIGHT);
    expect(state().updates.length).toBeGreaterThan(0);
    expect(state().updates.length).toBeLessThan(downloads.length);
    expect(state().updates.at(-1)).toBe(1_000);
    expect(state().finished).toBe(1);
  });

  it('shows no progress for a fetch done within the delay', async () => {
    const { fetchOne, reporter, now, state } = harness(0);
    await fetchAll(downloads, fetchOne, reporter, now);
    expect(state()).toMatchObject({ updates: [], finished: 1 });
  });

  it('fails with the first failure once the fetches in flight are done, and starts no new one', async () => {
    const { fetchOne, reporter, now, state } = harness(0, 'k2');
    await expect(fetchAll(downloads, fetchOne, reporter, now)).rejects.toThrow('cannot fetch k2');
    expect(state().inFlight).toBe(0);
    expect(state().fetched.length).toBeLessThan(downloads.length - 1);
    expect(state().finished).toBe(1);
  });

  it('fetches nothing for no file', async () => {
    const { fetchOne, reporter, now } = harness(0);
    expect(await fetchAll([], fetchOne, reporter, now)).toEqual({ rows: 0, bytes: 0, totalBytes: 0, elapsedMs: 0 });
  });
});
