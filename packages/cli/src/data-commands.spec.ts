import type { CliIo } from './io';
import { run } from './program';

/** A request the fake gateway received. */
interface Received {
  method: string;
  path: string;
  body: string | null;
}

/** A fake gateway: `answer` maps each request to a status, a body and headers. */
type Answer = (request: Received) => { status?: number; body: string; headers?: Record<string, string> };

async function runWith(args: string[], answer: Answer, input = ''): Promise<{ exitCode: number; stdout: string; stderr: string; received: Received[] }> {
  let stdout = '';
  let stderr = '';
  const received: Received[] = [];
  let clock = 0;
  const io: CliIo = {
    writeOut: (text) => void (stdout += text),
    writeError: (text) => void (stderr += text),
    env: { MINK_GATEWAY_URL: 'http://gateway.test' },
    fetch: async (url, init) => {
      const request = { method: init?.method ?? 'GET', path: String(url).replace('http://gateway.test', ''), body: typeof init?.body === 'string' ? init.body : null };
      received.push(request);
      const { status = 200, body, headers = {} } = answer(request);
      return new Response(body, { status, headers: { 'content-type': 'application/json', ...headers } });
    },
    openInput: () => ({
      chunks: (async function* () {
        yield Buffer.from(input);
      })(),
      size: Buffer.byteLength(input),
    }),
    errorIsTerminal: false,
    now: () => (clock += 100),
  };
  const exitCode = await run(args, io, async () => {
    throw new Error('the test must not start a cluster');
  });
  return { exitCode, stdout, stderr, received };
}

const ROWS = ['{"id":1}', '{"id":2}', '{"id":3}', '{"id":4}', '{"id":5}'];

describe('mink append and mink put', () => {
  it.each(['append', 'put'])('%s sends the rows of a JSON Lines file in calls of --batch rows, in order, and sums up', async (verb) => {
    const result = await runWith([verb, 'events', 'rows.jsonl', '--batch', '2'], () => ({ body: '{"appended":2,"buckets":[]}' }), `${ROWS.join('\n')}\n`);
    expect(result.received).toEqual([
      { method: 'POST', path: `/v1/tables/events/${verb}`, body: '{"rows":[{"id":1},{"id":2}]}' },
      { method: 'POST', path: `/v1/tables/events/${verb}`, body: '{"rows":[{"id":3},{"id":4}]}' },
      { method: 'POST', path: `/v1/tables/events/${verb}`, body: '{"rows":[{"id":5}]}' },
    ]);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^${verb === 'append' ? 'appended' : 'put'} 5 rows \\(0\\.0 MB\\) to events in [\\d.]+ s: [\\d ]+ rows/s, [\\d.]+ MB/s\\n$`));
  });

  it('stops at a refused call, saying which lines it held and how many rows went before it', async () => {
    const result = await runWith(['append', 'events', 'rows.jsonl', '--batch', '2'], (request) =>
      request.body?.includes('"id":3') ? { status: 400, body: '{"error":{"code":"InvalidArgument","message":"row 0: column \'id\' wants an int64"}}' } : { body: '{}' },
    `${ROWS.join('\n')}\n`);
    expect(result.received).toHaveLength(2);
    // Standard error holds the progress lines, then the error.
    expect([result.exitCode, result.stderr.split('\n').at(-2)]).toEqual([1, "error: InvalidArgument: row 0: column 'id' wants an int64 (the call of lines 3-4 failed; the 2 rows before it were appended)"]);
  });

  it('stops at a line that is not a row, after sending the rows before it', async () => {
    const result = await runWith(['append', 'events', 'rows.jsonl', '--batch', '10'], () => ({ body: '{}' }), '{"id":1}\n{"id":2}\n{"id":\n{"id":4}\n');
    expect(result.received.map((request) => request.body)).toEqual(['{"rows":[{"id":1},{"id":2}]}']);
    expect(result.exitCode).toBe(1);
    expect(result.stderr.split('\n').at(-2)).toMatch(/^error: line 3 is not JSON \(.*\) \(the 2 rows before it were appended\)$/);
  });
});

describe('mink scan', () => {
  /** A table of two buckets holding records 0–2 (bucket 0) and 0–1 (bucket 1), served `limit` at a time. */
  const records: Record<number, string[]> = {
    0: ['{"offset":0,"row":{"id":"10"}}', '{"offset":1,"row":{"id":"11"}}', '{"offset":2,"row":{"id":"12"}}'],
    1: ['{"offset":0,"row":{"id":"20"}}', '{"offset":1,"row":{"id":"21"}}'],
  };
  const gateway: Answer = (request) => {
    if (request.path === '/v1/tables/events') return { body: JSON.stringify({ name: 'events', buckets: 2, bucketLeaders: [] }) };
    const query = new URL(`http://x${request.path}`).searchParams;
    const bucket = Number(query.get('bucket'));
    const offset = Number(query.get('offset'));
    const taken = records[bucket]!.slice(offset, offset + Math.min(2, Number(query.get('limit'))));
    return {
      body: taken.map((line) => `${line}\n`).join(''),
      headers: { 'content-type': 'application/x-ndjson', 'mink-next-offset': String(offset + taken.length), 'mink-high-watermark': String(records[bucket]!.length) },
    };
  };

  it('prints every record of every bucket as JSON Lines, paging to each high watermark', async () => {
    const result = await runWith(['scan', 'events'], gateway);
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect(result.stdout).toBe(`${[...records[0]!, ...records[1]!].join('\n')}\n`);
    expect(result.received.map((request) => request.path)).toEqual([
      '/v1/tables/events',
      '/v1/tables/events/scan?bucket=0&offset=0&limit=10000',
      '/v1/tables/events/scan?bucket=0&offset=2&limit=10000',
      '/v1/tables/events/scan?bucket=1&offset=0&limit=10000',
    ]);
  });

  it('scans one bucket from an offset, and stops after --limit records', async () => {
    expect((await runWith(['scan', 'events', '--bucket', '0', '--from', '1'], gateway)).stdout).toBe(`${records[0]!.slice(1).join('\n')}\n`);
    expect((await runWith(['scan', 'events', '--limit', '3'], gateway)).stdout).toBe(`${[...records[0]!].join('\n')}\n`);
  });

  it('follows every bucket at once with long polls, and calls the waiting ones off once --limit records are printed', async () => {
    let stdout = '';
    const waits: string[] = [];
    let abortedWaits = 0;
    const io: CliIo = {
      writeOut: (text) => void (stdout += text),
      writeError: () => undefined,
      env: { MINK_GATEWAY_URL: 'http://gateway.test' },
      fetch: async (url, init) => {
        const path = String(url).replace('http://gateway.test', '');
        if (path === '/v1/tables/events') return new Response(JSON.stringify({ name: 'events', buckets: 2, bucketLeaders: [] }));
        const query = new URL(String(url)).searchParams;
        waits.push(`${query.get('bucket')}:${query.get('wait')}`);
        if (query.get('bucket') === '0') {
          return new Response('{"offset":5,"row":{"id":"1"}}\n', { headers: { 'mink-next-offset': '6', 'mink-high-watermark': '6' } });
        }
        // Bucket 1 has nothing: its long poll hangs until the command calls it off.
        return new Promise<Response>((_resolve, reject) =>
          init!.signal!.addEventListener('abort', () => {
            abortedWaits++;
            reject(init!.signal!.reason);
          }),
        );
      },
    };
    const exitCode = await run(['scan', 'events', '--from', '5', '--follow', '--limit', '1', '--wait', '30s'], io);
    expect([exitCode, stdout]).toEqual([0, '{"offset":5,"row":{"id":"1"}}\n']);
    expect(waits.sort()).toEqual(['0:30000ms', '1:30000ms']);
    expect(abortedWaits).toBe(1);
  });

  it('asks a partitioned table for --partition, naming the partitions', async () => {
    const partitioned: Answer = () => ({ body: JSON.stringify({ name: 'events', buckets: 1, partition: { column: 'at', unit: 'hour' }, bucketLeaders: [{ partition: '2026120100' }, { partition: '2026120101' }] }) });
    const result = await runWith(['scan', 'events'], partitioned);
    expect([result.exitCode, result.stderr]).toEqual([2, "error: table 'events' is partitioned: name one with --partition (2026120100, 2026120101)\n"]);
  });
});

describe('mink lookup', () => {
  it('prints each key\'s row as a JSON line, null when absent', async () => {
    const result = await runWith(['lookup', 'orders', '{"id":1}', '{"id":2}', '--columns', 'id,total'], () => ({ body: '{"rows":[{"id":"1","total":5},null]}' }));
    expect(result.received).toEqual([{ method: 'POST', path: '/v1/tables/orders/lookup', body: '{"keys":[{"id":1},{"id":2}],"columns":["id","total"]}' }]);
    expect([result.exitCode, result.stdout]).toEqual([0, '{"id":"1","total":5}\nnull\n']);
  });

  it('refuses a key that is not a JSON object before sending anything', async () => {
    const result = await runWith(['lookup', 'orders', 'id=1'], () => ({ body: '{}' }));
    expect([result.exitCode, result.stderr, result.received]).toEqual([2, "error: key 1 ('id=1') is not a JSON object such as '{\"id\": 1}'\n", []]);
  });
});
