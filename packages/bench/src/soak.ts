import { BENCH_PAYLOAD_CHARS, BENCH_SOAK, BENCH_TABLE } from './bench-limits';
import { HttpLoad } from './http-load';
import { readResidentMemory } from './memory-watch';
import type { RoleProcess } from './process-usage';
import { callsDue, soakGrowthOf, type SoakResult, type SoakSample } from './soak-figures';
import { summarizeLatencies } from './stats';
import { benchRows } from './write-scenario';

/**
 * The soak (issue 43: "≤ 5 % growth over a 10-minute soak"): appends through the gateway at a steady rate
 * for minutes while the resident memory of every mink process is sampled, to tell memory that settles once
 * the caches are full and V8's heaps have grown from memory that keeps growing.
 */
export interface SoakSettings {
  gatewayUrl: string;
  minutes: number;
  /**
   * Rows offered per second, in calls of `batchRows`; a call that falls due while BENCH_SOAK.callsInFlightMax are
   * in flight is dropped, not queued, so a cluster that cannot keep up shows as a lower rate achieved (and the
   * latencies are those of the calls made).
   */
  rowsPerSecond: number;
  batchRows: number;
  /** Ids of the soak's rows start here (apart from the other scenarios' ranges). */
  firstId: number;
  processes: () => RoleProcess[];
  signal: AbortSignal;
  progress: (line: string) => void;
}

/** One sample of `processes` summed (see SoakSample). */
function sampleTogether(processes: readonly RoleProcess[], atMs: number): SoakSample {
  const read = readResidentMemory(processes);
  const roles: Record<string, number> = {};
  let rssBytes = 0;
  let anonBytes = 0;
  for (const entry of read.processes) {
    rssBytes += entry.rssBytes;
    anonBytes += entry.anonBytes;
    roles[entry.role] = (roles[entry.role] ?? 0) + entry.rssBytes;
  }
  return { atMs, rssBytes, anonBytes, roles };
}

/** Runs the soak (see SoakSettings); null when interrupted before it could tell anything. */
export async function runSoak(settings: SoakSettings): Promise<SoakResult | null> {
  const url = `${settings.gatewayUrl}/v1/tables/${encodeURIComponent(BENCH_TABLE.name)}/append`;
  const http = new HttpLoad(BENCH_SOAK.callsInFlightMax);
  const durationMs = settings.minutes * 60_000;
  const samples: SoakSample[] = [];
  const rowsSettings = { rows: Number.MAX_SAFE_INTEGER, batchRows: settings.batchRows, firstId: settings.firstId, payloadChars: BENCH_PAYLOAD_CHARS };
  let sent = 0;
  let inFlight = 0;
  let acknowledgedRows = 0;
  let errors = 0;
  let firstError: string | null = null;
  const startedAt = performance.now();
  const elapsed = (): number => performance.now() - startedAt;
  /** Each acknowledged call: when it was sent (ms since the start) and how long it took. */
  const calls: { atMs: number; tookMs: number }[] = [];
  const send = async (index: number): Promise<void> => {
    inFlight += 1;
    const sentAt = elapsed();
    try {
      const rows = benchRows(rowsSettings, index);
      const reply = await http.send(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify({ rows })) });
      if (reply.status < 200 || reply.status > 299) throw new Error(`HTTP ${reply.status}: ${reply.body.toString('utf8').slice(0, 300)}`);
      acknowledgedRows += rows.length;
      calls.push({ atMs: sentAt, tookMs: elapsed() - sentAt });
    } catch (error) {
      errors += 1;
      firstError ??= error instanceof Error ? error.message : String(error);
    } finally {
      inFlight -= 1;
    }
  };
  const pending = new Set<Promise<void>>();
  let nextSampleAtMs = 0;
  let nextProgressAtMs = BENCH_SOAK.progressEveryMs;
  try {
    while (!settings.signal.aborted && elapsed() < durationMs) {
      const now = elapsed();
      if (now >= nextSampleAtMs) {
        samples.push(sampleTogether(settings.processes(), Math.round(now)));
        nextSampleAtMs += BENCH_SOAK.sampleIntervalMs;
      }
      if (now >= nextProgressAtMs) {
        const last = samples[samples.length - 1];
        settings.progress(
          `  soak: ${Math.round(now / 1_000)} s of ${settings.minutes * 60} s, ${acknowledgedRows} rows (${Math.round(acknowledgedRows / (now / 1_000))} rows/s), ` +
            `${errors} errors, mink RSS together ${last ? (last.rssBytes / 1_048_576).toFixed(1) : '?'} MiB`,
        );
        nextProgressAtMs += BENCH_SOAK.progressEveryMs;
      }
      let due = callsDue(now, settings.rowsPerSecond, settings.batchRows, sent);
      while (due > 0 && inFlight < BENCH_SOAK.callsInFlightMax) {
        const call = send(sent);
        sent += 1;
        due -= 1;
        pending.add(call);
        void call.then(() => pending.delete(call));
      }
      // A call beyond the in-flight bound is not queued: the rate the cluster took shows in rowsPerSecond.
      if (due > 0) sent += due;
      await new Promise((resolve) => setTimeout(resolve, BENCH_SOAK.tickMs));
    }
    await Promise.all(pending);
  } finally {
    http.close();
  }
  const tookMs = elapsed();
  samples.push(sampleTogether(settings.processes(), Math.round(tookMs)));
  if (samples.length < 2) return null;
  const lastMinute = calls.filter((call) => call.atMs >= tookMs - 60_000).map((call) => call.tookMs);
  return {
    minutes: settings.minutes,
    rowsPerSecondOffered: settings.rowsPerSecond,
    rows: acknowledgedRows,
    rowsPerSecond: acknowledgedRows / (tookMs / 1_000),
    errors,
    firstError,
    latency: calls.length === 0 ? null : summarizeLatencies(calls.map((call) => call.tookMs)),
    lastMinuteLatency: lastMinute.length === 0 ? null : summarizeLatencies(lastMinute),
    samples,
    growth: soakGrowthOf(samples, BENCH_SOAK.warmupMs, BENCH_SOAK.windowMs),
  };
}
