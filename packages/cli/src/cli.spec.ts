import type { LocalClusterOptions } from '@mink/devcluster';
import type { CliIo } from './io';
import { run, withoutForwardedSeparator } from './program';
import { buildCreateTableBody, type CreateTableFlags } from './table-commands';

/** A recorded request to the fake gateway. */
interface RecordedRequest {
  method: string;
  url: string;
  body: unknown;
}

/** Runs the CLI in-process against a fake gateway that answers every request with `status` and `body`. */
async function runCli(
  args: string[],
  answer: { status: number; body?: unknown } | Error = { status: 200, body: {} },
  env: NodeJS.ProcessEnv = {},
): Promise<{ exitCode: number; stdout: string; stderr: string; requests: RecordedRequest[] }> {
  let stdout = '';
  let stderr = '';
  const requests: RecordedRequest[] = [];
  const io: CliIo = {
    writeOut: (text) => void (stdout += text),
    writeError: (text) => void (stderr += text),
    env,
    fetch: async (input, init) => {
      requests.push({ method: init?.method ?? 'GET', url: String(input), body: init?.body ? JSON.parse(String(init.body)) : undefined });
      if (answer instanceof Error) throw answer;
      const text = answer.body === undefined ? null : JSON.stringify(answer.body);
      return new Response(text, { status: answer.status, headers: { 'content-type': 'application/json' } });
    },
  };
  const startCluster = async (options: LocalClusterOptions): Promise<never> => {
    throw new Error(`the test must not start a cluster (${options.dataDir})`);
  };
  const exitCode = await run(args, io, startCluster);
  return { exitCode, stdout, stderr, requests };
}

const CREATE_DEFAULTS: CreateTableFlags = { columns: 'id:int64', buckets: 8 };

describe('buildCreateTableBody', () => {
  it.each<[string, Partial<CreateTableFlags>, object]>([
    ['a log table with the default bucket count', { columns: 'id:int64, name:string' }, { columns: [{ name: 'id', type: 'int64' }, { name: 'name', type: 'string' }], buckets: 8 }],
    ['a PK table with a bucket key', { columns: 'k:string,v:int32', primaryKey: ['k'], bucketKey: ['k'], buckets: 4 }, { primaryKey: ['k'], bucketKey: ['k'], buckets: 4 }],
    ['a partition without retain', { columns: 'ts:timestamp', partition: 'ts:day' }, { partition: { column: 'ts', unit: 'day' } }],
    ['a partition with retain', { columns: 'ts:timestamp', partition: 'ts:hour:24' }, { partition: { column: 'ts', unit: 'hour', retain: 24 } }],
    ['a partition with retain and precreate', { columns: 'ts:timestamp', partition: 'ts:hour:24:3' }, { partition: { column: 'ts', unit: 'hour', retain: 24, precreate: 3 } }],
    ['a partition with precreate and no retain', { columns: 'ts:timestamp', partition: 'ts:day::0' }, { partition: { column: 'ts', unit: 'day', precreate: 0 } }],
    ['properties with = in the value', { property: ['a=1', 'b=x=y'] }, { properties: { a: '1', b: 'x=y' } }],
  ])('builds %s', (_case, flags, expected) => {
    // Proves each flag lands in the POST /v1/tables body under the field docs/architecture.md §12 names.
    expect(buildCreateTableBody('events', { ...CREATE_DEFAULTS, ...flags })).toEqual(expect.objectContaining({ name: 'events', ...expected }));
  });

  it.each<[string, Partial<CreateTableFlags>, RegExp]>([
    ['a column without a type', { columns: 'id' }, /--columns: 'id' is not name:type/],
    ['an empty column list', { columns: ' , ' }, /--columns: expected name:type pairs/],
    ['a column with two colons', { columns: 'a:b:c' }, /--columns: 'a:b:c' is not name:type/],
    ['a partition without a unit', { partition: 'ts' }, /--partition: 'ts' is not column:unit\[:retain\[:precreate\]\]/],
    ['a precreate that is not a number', { partition: 'ts:day:7:x' }, /--partition: precreate 'x' is not a number of partitions/],
    ['too many parts', { partition: 'ts:day:7:1:2' }, /is not column:unit/],
    ['an unknown partition unit', { partition: 'ts:week' }, /--partition: unit 'week' is not one of hour, day/],
    ['a retain of zero', { partition: 'ts:day:0' }, /--partition: retain '0' is not a positive number/],
    ['a property without =', { property: ['x'] }, /--property: 'x' is not key=value/],
  ])('rejects %s', (_case, flags, message) => {
    // Proves malformed flags fail locally with a message naming the flag, before any request.
    expect(() => buildCreateTableBody('events', { ...CREATE_DEFAULTS, ...flags })).toThrow(message);
  });
});

describe('mink table and mink cluster', () => {
  it('creates a table with one POST to the gateway named by MINK_GATEWAY_URL', async () => {
    // Proves the request (method, URL, body) and the one-line confirmation.
    const result = await runCli(
      ['table', 'create', 'events', '--columns', 'id:int64,name:string', '--primary-key', 'id', '--buckets', '2'],
      { status: 201, body: { tableId: 1 } },
      { MINK_GATEWAY_URL: 'http://gateway.test:9000/' },
    );
    expect(result).toEqual({
      exitCode: 0,
      stdout: 'created pk table events with 2 buckets\n',
      stderr: '',
      requests: [
        {
          method: 'POST',
          url: 'http://gateway.test:9000/v1/tables',
          body: { name: 'events', columns: [{ name: 'id', type: 'int64' }, { name: 'name', type: 'string' }], primaryKey: ['id'], buckets: 2 },
        },
      ],
    });
  });

  it('prints an API error as error: <code>: <message> and exits 1', async () => {
    // Proves the error line format of docs/architecture.md §12 errors and exit code 1.
    const result = await runCli(['table', 'create', 'events', '--columns', 'id:int64'], {
      status: 409,
      body: { error: { code: 'Conflict', message: "table 'events' exists" } },
    });
    expect([result.exitCode, result.stderr, result.stdout]).toEqual([1, "error: Conflict: table 'events' exists\n", '']);
  });

  it('reports an unreachable gateway as Unavailable and exits 1', async () => {
    // Proves a network failure names the gateway and the socket error instead of "fetch failed".
    const refused = new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
    const result = await runCli(['table', 'list', '--gateway', 'http://127.0.0.1:1'], refused);
    expect([result.exitCode, result.stderr]).toEqual([1, 'error: Unavailable: cannot reach the gateway at http://127.0.0.1:1 (ECONNREFUSED)\n']);
  });

  it('lists tables as an aligned table, or raw JSON with --json', async () => {
    // Proves both renderings of GET /v1/tables.
    const tables = {
      tables: [
        { name: 'events', kind: 'log', columns: [{ name: 'id', type: 'int64' }], primaryKey: [], buckets: 8, partition: { column: 'ts', unit: 'day', retain: 7 }, partitions: ['20261201', '20261202', '20261203'] },
        { name: 'fresh', kind: 'log', columns: [{ name: 'ts', type: 'timestamp' }], primaryKey: [], buckets: 1, partition: { column: 'ts', unit: 'hour', precreate: 0 }, partitions: [] },
        { name: 'users', kind: 'pk', columns: [{ name: 'id', type: 'int64' }, { name: 'name', type: 'string' }], primaryKey: ['id'], buckets: 4 },
      ],
    };
    const text = await runCli(['table', 'list'], { status: 200, body: tables });
    expect(text.stdout.split('\n')).toEqual([
      'NAME    KIND  COLUMNS  PRIMARY KEY  BUCKETS  PARTITION                   PARTITIONS',
      'events  log   1        -            8        ts by day, keep 7           3 (20261201 to 20261203)',
      'fresh   log   1        -            1        ts by hour, create 0 ahead  none yet',
      'users   pk    2        id           4        -                           -',
      '',
    ]);
    expect(text.requests.map((request) => `${request.method} ${request.url}`)).toEqual(['GET http://127.0.0.1:8080/v1/tables']);
    const json = await runCli(['table', 'list', '--json'], { status: 200, body: tables });
    expect(JSON.parse(json.stdout)).toEqual(tables);
  });

  it('describes a table with its columns and bucket leaders', async () => {
    // Proves the describe rendering and that the name is URL-encoded in the path.
    const table = {
      name: 'a b',
      kind: 'pk',
      columns: [{ name: 'id', type: 'int64' }],
      primaryKey: ['id'],
      bucketKey: ['id'],
      buckets: 2,
      bucketLeaders: [
        { bucket: 0, leader: '1', leaderEpoch: 3, state: 'open' },
        { bucket: 1, leader: '2', leaderEpoch: 1, stream: { state: 'closed', epoch: 1 } },
      ],
      properties: {},
    };
    const result = await runCli(['table', 'describe', 'a b'], { status: 200, body: table });
    expect(result.requests[0]!.url).toBe('http://127.0.0.1:8080/v1/tables/a%20b');
    expect(result.stdout).toBe(
      [
        'table        a b',
        'kind         pk',
        'primary key  id',
        'bucket key   id',
        'buckets      2',
        'partition    -',
        'properties   -',
        '',
        'COLUMN  TYPE',
        'id      int64',
        '',
        'BUCKET  LEADER  EPOCH  STATE',
        '0       1       3      open',
        '1       2       1      closed',
        '',
      ].join('\n'),
    );
  });

  it('describes a partitioned table with its partition spec, its live partitions, and the leader of each bucket of each', async () => {
    // Proves what `mink table describe` shows of partitions: the spec, every live partition in creation
    // order, and a PARTITION column in the bucket table.
    const table = {
      name: 'clicks',
      kind: 'log',
      columns: [{ name: 'ts', type: 'timestamp' }],
      primaryKey: [],
      bucketKey: [],
      buckets: 1,
      partition: { column: 'ts', unit: 'hour', retain: 24, precreate: 2 },
      partitions: ['2026120110', '2026120111'],
      bucketLeaders: [
        { bucket: 0, partition: '2026120110', leader: '1', leaderEpoch: 1, stream: { state: 'open', epoch: 1 } },
        { bucket: 0, partition: '2026120111', leader: '2', leaderEpoch: 1, stream: { state: 'open', epoch: 1 } },
      ],
      properties: {},
    };
    const result = await runCli(['table', 'describe', 'clicks'], { status: 200, body: table });
    expect(result.stdout).toBe(
      [
        'table        clicks',
        'kind         log',
        'primary key  -',
        'bucket key   -',
        'buckets      1',
        'partition    ts by hour, keep 24, create 2 ahead',
        'partitions   2026120110, 2026120111',
        'properties   -',
        '',
        'COLUMN  TYPE',
        'ts      timestamp',
        '',
        'PARTITION   BUCKET  LEADER  EPOCH  STATE',
        '2026120110  0       1       1      open',
        '2026120111  0       2       1      open',
        '',
      ].join('\n'),
    );
    const empty = await runCli(['table', 'describe', 'clicks'], { status: 200, body: { ...table, partitions: [], bucketLeaders: [] } });
    expect(empty.stdout).toContain('partitions   none yet\n');
  });

  it('drops a table with DELETE', async () => {
    // Proves the drop request and its confirmation, also when the gateway answers with no body.
    const result = await runCli(['table', 'drop', 'events'], { status: 204 });
    expect([result.exitCode, result.stdout, result.requests[0]!.method]).toEqual([0, 'dropped table events\n', 'DELETE']);
  });

  it('alters a table\'s properties with PATCH, setting and removing them', async () => {
    const result = await runCli(['table', 'alter', 'events', '--property', 'table.log.ttl=3d', '--property', 'table.datalake.enabled=true', '--unset', 'table.datalake.freshness', '--json'], {
      status: 200,
      body: { name: 'events', properties: { 'table.log.ttl': '3d' } },
    });
    expect(result.exitCode).toBe(0);
    expect(result.requests.map(({ method, url, body }) => ({ method, path: new URL(url).pathname, body }))).toEqual([
      { method: 'PATCH', path: '/v1/tables/events', body: { properties: { 'table.log.ttl': '3d', 'table.datalake.enabled': 'true', 'table.datalake.freshness': null } } },
    ]);
  });

  it('refuses an alter without a property', async () => {
    const result = await runCli(['table', 'alter', 'events'], { status: 200, body: {} });
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr).toContain('give at least one --property or --unset');
    expect(result.requests).toEqual([]);
  });

  it('shows the cluster status: coordinator, nodes and bucket states', async () => {
    // Proves the status rendering of GET /v1/cluster.
    const status = {
      coordinator: { node: 'coordinator-1', epoch: 2 },
      nodes: [
        { id: '1', epoch: 1, live: true, address: 'mink.node.1', kafka: '127.0.0.1:9092', buckets: 2 },
        { id: '2', epoch: 4, live: false, address: 'mink.node.2', kafka: '127.0.0.1:9093', buckets: 0 },
      ],
      buckets: [
        { table: 'events', bucket: 0, leader: '1', leaderEpoch: 1, state: 'open' },
        { table: 'events', bucket: 1, leader: '1', leaderEpoch: 2, state: 'opening' },
      ],
    };
    const result = await runCli(['cluster', 'status'], { status: 200, body: status });
    expect(result.stdout.split('\n')).toEqual([
      'coordinator coordinator-1 (epoch 2)',
      '',
      'NODE  EPOCH  LIVE  ADDRESS      KAFKA           BUCKETS',
      '1     1      yes   mink.node.1  127.0.0.1:9092  2',
      '2     4      no    mink.node.2  127.0.0.1:9093  0',
      '',
      'buckets: 2 (1 open, 1 opening)',
      '',
    ]);
  });

  it.each([
    [['cluster', 'rebalance', '--dry-run'], 'http://127.0.0.1:8080/v1/cluster/rebalance?dryRun=true', 'would move 1 bucket(s) (dry run, nothing moved)'],
    [['cluster', 'rebalance'], 'http://127.0.0.1:8080/v1/cluster/rebalance?dryRun=false', 'moved 1 bucket(s)'],
  ])('rebalances: %j', async (args, url, heading) => {
    // Proves the dryRun query parameter follows the flag and the plan is printed as a table.
    const result = await runCli(args, { status: 200, body: { moves: [{ table: 'events', bucket: 3, from: null, to: '2' }] } });
    expect(result.requests).toEqual([{ method: 'POST', url, body: undefined }]);
    expect(result.stdout).toBe(`${heading}\n\nTABLE   PARTITION  BUCKET  FROM  TO\nevents  -          3       -     2\n`);
  });
});

describe('usage errors', () => {
  it.each([
    [['up', '--nodes', '0'], "error: option '--nodes <count>' argument '0' is invalid. expected an integer from 1 to 32.\n"],
    [['up', '--lease-ttl', '3x'], "error: option '--lease-ttl <duration>' argument '3x' is invalid. expected a duration such as 3s, 500ms, 2m or plain milliseconds.\n"],
    [['up', '--gateway-port', '70000'], "error: option '--gateway-port <port>' argument '70000' is invalid. expected an integer from 0 to 65535.\n"],
    [['up', '--bogus'], "error: unknown option '--bogus'\n"],
    [['up', 'extra'], "error: too many arguments for 'up'. Expected 0 arguments but got 1.\n"],
    [['table', 'create', 'events'], "error: required option '--columns <list>' not specified\n"],
    [['table', 'create', 'events', '--columns', 'id'], "error: --columns: 'id' is not name:type (for example id:int64)\n"],
    [['table', 'create', 'events', '--columns', 'id:int64', '--buckets', 'many'], "error: option '--buckets <count>' argument 'many' is invalid. expected an integer from 1 to 1024.\n"],
    [['frobnicate'], "error: unknown command 'frobnicate'\n"],
  ])('%j prints one error line and exits 2', async (args, line) => {
    // Proves a wrong command line never starts anything or calls the gateway, and exits with code 2.
    const result = await runCli(args);
    expect(result).toEqual({ exitCode: 2, stdout: '', stderr: line, requests: [] });
  });

  it('prints help and exits 0 for --help', async () => {
    // Proves --help is not treated as an error and documents the duration syntax and defaults.
    const result = await runCli(['up', '--help']);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('--lease-ttl <duration>');
    expect(result.stdout).toContain('(default: 30s)');
  });
});

describe('withoutForwardedSeparator', () => {
  it.each<[string[], string[]]>([
    [['up', '--', '--nodes', '5'], ['up', '--nodes', '5']],
    [['table', 'list', '--', '--json'], ['table', 'list', '--json']],
    [['up', '--nodes', '5'], ['up', '--nodes', '5']],
    [['--', '--rows', '5'], ['--rows', '5']],
    [['up', '--', '--', '--nodes'], ['up', '--', '--nodes']],
  ])('turns %p into %p', (args, expected) => {
    // Proves `pnpm mink -- table list --json` reaches commander as `table list --json` (and `pnpm bench -- --rows 5`
    // reaches mink-bench as `--rows 5`), and only one separator is removed.
    expect(withoutForwardedSeparator(args)).toEqual(expected);
  });
});
