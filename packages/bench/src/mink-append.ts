import { Float64, Int64, RecordBatch, Utf8, makeData, vectorFromArray } from 'apache-arrow';
import { MinkClient, type TableClient } from '@mink/client';
import { BENCH_TABLE } from './bench-limits';
import { HttpLoad } from './http-load';
import type { AppendResult } from './results';
import { runWriteScenario, type BatchWriter, type BenchRow, type WriteScenarioSettings } from './write-scenario';

/** `POST /v1/tables/{table}/append` with `{rows}` bodies, `concurrency` requests in flight. */
export async function runGatewayAppend(gatewayUrl: string, settings: WriteScenarioSettings): Promise<AppendResult | null> {
  const url = `${gatewayUrl}/v1/tables/${encodeURIComponent(BENCH_TABLE.name)}/append`;
  const http = new HttpLoad(settings.concurrency);
  const writer: BatchWriter<Buffer> = {
    encode: (rows) => {
      const payload = Buffer.from(JSON.stringify({ rows }));
      return { payload, rowCount: rows.length, jsonBytes: payload.byteLength };
    },
    send: async (batch) => {
      const reply = await http.send(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: batch.payload });
      const text = reply.body.toString('utf8');
      if (reply.status < 200 || reply.status > 299) throw new Error(`HTTP ${reply.status}: ${text.slice(0, 300)}`);
      const appended = (JSON.parse(text) as { appended?: unknown }).appended;
      if (appended !== batch.rowCount) throw new Error(`the gateway acknowledged ${String(appended)} rows of ${batch.rowCount}`);
    },
  };
  try {
    const outcome = await runWriteScenario('gateway append', writer, settings);
    return outcome === null ? null : { path: 'gateway', ...outcome.result };
  } finally {
    http.close();
  }
}

/** `MinkClient.table(name).append(rows)` over NATS, `concurrency` calls in flight on one client. */
export function runClientAppend(natsUrl: string, settings: WriteScenarioSettings): Promise<AppendResult | null> {
  return runClientWrite(natsUrl, 'client', settings, (rows) => rows, (table, rows) => table.append(rows));
}

/**
 * `MinkClient.table(name).appendArrow(batch)`: a producer that already holds its rows as Arrow columns.
 * The record batch is built before the call is timed (a producer has it), from the same rows as the other
 * scenarios.
 */
export function runClientArrowAppend(natsUrl: string, settings: WriteScenarioSettings): Promise<AppendResult | null> {
  return runClientWrite(natsUrl, 'client arrow', settings, recordBatchOf, (table, batch) => table.appendArrow(batch));
}

/**
 * One client append scenario on a client of its own: each call's rows are prepared by `prepare` and sent
 * by `append`. MB/s counts the JSON the rows would be, so every path compares with the gateway's.
 */
async function runClientWrite<Payload>(
  natsUrl: string,
  path: 'client' | 'client arrow',
  settings: WriteScenarioSettings,
  prepare: (rows: BenchRow[]) => Payload,
  append: (table: TableClient, payload: Payload) => Promise<{ appended: number }>,
): Promise<AppendResult | null> {
  const client = await MinkClient.connect({ servers: natsUrl, name: `mink-bench ${path}` });
  try {
    const table = client.table(BENCH_TABLE.name);
    const writer: BatchWriter<Payload> = {
      encode: (rows) => ({ payload: prepare(rows), rowCount: rows.length, jsonBytes: Buffer.byteLength(JSON.stringify({ rows })) }),
      send: async (batch) => {
        const result = await append(table, batch.payload);
        if (result.appended !== batch.rowCount) throw new Error(`the client acknowledged ${result.appended} rows of ${batch.rowCount}`);
      },
    };
    const outcome = await runWriteScenario(`${path} append`, writer, settings);
    return outcome === null ? null : { path, ...outcome.result };
  } finally {
    await client.close();
  }
}

/** The bench rows as one Arrow record batch of the log table's columns (id, name, value, payload). */
function recordBatchOf(rows: BenchRow[]): RecordBatch {
  return new RecordBatch({
    id: makeData({ type: new Int64(), length: rows.length, data: BigInt64Array.from(rows, (row) => BigInt(row.id)) }),
    name: vectorFromArray(rows.map((row) => row.name), new Utf8()).data[0]!,
    value: makeData({ type: new Float64(), length: rows.length, data: Float64Array.from(rows, (row) => row.value) }),
    payload: vectorFromArray(rows.map((row) => row.payload ?? null), new Utf8()).data[0]!,
  });
}
