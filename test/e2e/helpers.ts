import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LocalCluster } from '@mink/devcluster';

export { eventually } from '@mink/testing';

/** Helpers shared by the end-to-end tests: temp folders, HTTP calls to the gateway, polling. */

/**
 * The cluster shape of the fault and load tests: 3 data nodes, 2 coordinators, free ports, and a short
 * lease_ttl (3 s) and coordinator tick (500 ms) so that liveness decisions happen within a test's time.
 */
export const SHORT_LEASE_CLUSTER = { nodes: 3, coordinators: 2, gatewayPort: 0, kafkaPort: 0, leaseTtlMs: 3_000, coordinatorTickMs: 500 } as const;
/** The smallest whole cluster with the short lease: one data node and one coordinator, for tests of the surface rather than of failover. */
export const ONE_NODE_CLUSTER = { ...SHORT_LEASE_CLUSTER, nodes: 1, coordinators: 1 } as const;
/** Every data node's Kafka listener (`host:port`), in node order: the bootstrap servers a Kafka user would list. */
export function kafkaBrokersOf(cluster: LocalCluster): string[] {
  return cluster
    .processes()
    .filter((process) => process.role === 'data-node')
    .map((process) => `127.0.0.1:${process.ports.kafka}`);
}

export function temporaryDirectory(prefix: string): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), `mink-${prefix}-`));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

export interface HttpResult<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

/** One HTTP call; `token`, when given, goes as `Authorization: Bearer`. */
export async function http<T = any>(baseUrl: string, method: string, path: string, body?: unknown, token?: string): Promise<HttpResult<T>> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON (e.g. /metrics); keep the text.
  }
  return { status: response.status, body: parsed as T, headers: response.headers };
}

/**
 * Resolves, with a line naming it and the last error lines of its log, when the first process of the
 * cluster's current incarnations exits; never rejects. A test races a phase against it so that a cluster
 * falling over fails the test at once, saying why, instead of at the end of a long wait.
 */
export function firstProcessExit(cluster: LocalCluster): Promise<string> {
  return Promise.race(
    cluster.processes().map(async (entry) => {
      const status = await cluster.waitForExit(entry.role, entry.nodeId);
      const label = entry.nodeId === null ? entry.role : `${entry.role} ${entry.nodeId}`;
      let errors: string[] = [];
      try {
        errors = readFileSync(entry.logFile, 'utf8').split('\n').filter((line) => /"level":(50|60)|Error/.test(line)).slice(-5).map((line) => line.slice(0, 800));
      } catch {
        // No log to quote.
      }
      return `${label} (pid ${entry.pid}) exited with ${status.signal ?? `code ${status.code}`}; last error lines of its log:\n${errors.join('\n')}`;
    }),
  );
}

/**
 * `phase`, unless a process of the cluster exits first: then a failure quoting that exit, and the signal
 * handed to the phase is aborted so its polls and requests stop instead of running on in the background.
 */
export async function unlessAProcessExits<T>(exit: Promise<string>, phase: (stop: AbortSignal) => Promise<T>): Promise<T> {
  const stop = new AbortController();
  const exited = exit.then((line) => {
    stop.abort();
    return { exited: line };
  });
  const outcome = await Promise.race([phase(stop.signal).then((value) => ({ value })), exited]);
  if ('exited' in outcome) throw new Error(`a process exited: ${outcome.exited}`);
  return outcome.value;
}

/**
 * Restarts every coordinator of the cluster, one after the other, with the clock their partition loop
 * plans with moved by `offsetMs` (MINK_PARTITION_CLOCK_OFFSET_MS): a test moves partition time without
 * waiting for real hours. Only that clock moves; leases and heartbeats keep the real one.
 */
export async function restartCoordinatorsWithPartitionClock(cluster: LocalCluster, offsetMs: number): Promise<void> {
  for (const entry of cluster.processes().filter((process) => process.role === 'coordinator')) {
    await cluster.restart('coordinator', entry.nodeId, { env: { MINK_PARTITION_CLOCK_OFFSET_MS: String(offsetMs) } });
  }
}

/**
 * Like `firstProcessExit`, but only for the mink processes (coordinators, data nodes, gateway, tiering
 * workers): a test that kills nats-server itself on purpose still learns at once when a mink process exits.
 */
export function firstMinkProcessExit(cluster: LocalCluster): Promise<string> {
  const minkRoles = new Set(['coordinator', 'data-node', 'gateway', 'tiering-worker']);
  return Promise.race(
    cluster
      .processes()
      .filter((entry) => minkRoles.has(entry.role))
      .map(async (entry) => {
        const status = await cluster.waitForExit(entry.role, entry.nodeId);
        let errors: string[] = [];
        try {
          errors = readFileSync(entry.logFile, 'utf8').split('\n').filter((line) => /"level":(50|60)|Error/.test(line)).slice(-5).map((line) => line.slice(0, 800));
        } catch {
          // No log to quote.
        }
        return `${entry.role} ${entry.nodeId} (pid ${entry.pid}) exited with ${status.signal ?? `code ${status.code}`}; last error lines of its log:\n${errors.join('\n')}`;
      }),
  );
}

/** The outcome of `exit` if it has already settled, else null: a check, at the end of a test, that no process exited. */
export async function exitSoFar(exit: Promise<string>): Promise<string | null> {
  return Promise.race([exit, new Promise<null>((resolve) => setImmediate(() => resolve(null)))]);
}
