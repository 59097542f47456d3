import { readFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { LIMITS, sleep } from '@mink/config';

/** The lowest port `freePort` hands out: above the well-known and the usual fixed service ports. */
export const LISTEN_PORT_FLOOR = 10_000;
/** The kernel's default ephemeral range (Linux), used where `/proc` cannot be read. */
const DEFAULT_EPHEMERAL_RANGE: PortRange = { low: 32_768, high: 60_999 };
/** The fewest ports a range below the ephemeral one must hold for `freePort` to pick from it. */
const MIN_LISTEN_RANGE = 1_000;

export interface PortRange {
  low: number;
  high: number;
}

/**
 * The range `freePort` picks from, given the kernel's ephemeral range: the ports below it, from
 * `LISTEN_PORT_FLOOR` on. A port picked there cannot be taken by an outgoing connection (those get
 * ephemeral ports) between the pick and the bind. Null when too few ports lie below the ephemeral range:
 * the caller then lets the kernel pick.
 */
export function listenPortRange(ephemeral: PortRange): PortRange | null {
  const high = ephemeral.low - 1;
  if (high - LISTEN_PORT_FLOOR + 1 < MIN_LISTEN_RANGE) return null;
  return { low: LISTEN_PORT_FLOOR, high };
}

/** Parses `/proc/sys/net/ipv4/ip_local_port_range` ("32768\t60999"); null when it is not two ports. */
export function parsePortRange(text: string): PortRange | null {
  const parts = text.trim().split(/\s+/).map(Number);
  if (parts.length !== 2 || !parts.every((port) => Number.isInteger(port) && port > 0 && port < 65_536)) return null;
  const [low, high] = parts as [number, number];
  return low <= high ? { low, high } : null;
}

/** The kernel's ephemeral range, from which outgoing connections take their local ports. */
export function ephemeralRange(): PortRange {
  try {
    return parsePortRange(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')) ?? DEFAULT_EPHEMERAL_RANGE;
  } catch {
    return DEFAULT_EPHEMERAL_RANGE;
  }
}

/**
 * The ports WHATWG fetch refuses to connect to (the Fetch standard's "bad ports"): Node's `fetch` and every
 * browser fail on them ("bad port"), so a service there could not be reached by the web console, by
 * scripts using `fetch`, or by the tests. Only 10080 lies in the range `freePort` picks from, which once
 * made an end-to-end test that fetched a data node's HTTP port fail; the list is whole so the rule holds
 * for any range.
 */
const FETCH_BLOCKED_PORTS: ReadonlySet<number> = new Set([
  0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110, 111, 113, 115, 117,
  119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989,
  990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

/** Whether `fetch` (and a browser) refuses connections to `port`; `freePort` never hands such a port out. */
export function isFetchBlockedPort(port: number): boolean {
  return FETCH_BLOCKED_PORTS.has(port);
}

/**
 * Ports this process handed out or was told are taken (`reservePorts`): never handed out, so servers
 * started together do not collide.
 */
const handedOut = new Set<number>();

/**
 * Keeps `ports` from ever being handed out by `freePort` in this process: the fixed ports a cluster's
 * services will bind later (a data node's Kafka port given as base + n - 1 is free when the first services
 * pick theirs, and was once handed to a coordinator that started before the data node).
 */
export function reservePorts(ports: Iterable<number>): void {
  for (const port of ports) handedOut.add(port);
}
/** How many random candidates `freePort` checks before it gives up. */
const PICK_ATTEMPTS = 200;

/**
 * A TCP port that is free on `host` right now and lies below the kernel's ephemeral range, so no outgoing
 * connection (of any process) can take it before the caller binds it; a server restarted on it finds it
 * free for the same reason. Candidates are drawn at random (so neighbours of a port handed out are not
 * handed out next) and checked by binding them; this process never hands out a port twice, nor one that
 * `fetch` refuses (`isFetchBlockedPort`). Another process picking ports the same way could still pick the
 * same one between the check and the bind: not a reservation.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const range = listenPortRange(ephemeralRange());
  if (range === null) {
    for (let attempt = 0; attempt < PICK_ATTEMPTS; attempt += 1) {
      const port = await kernelPickedPort(host);
      if (!isFetchBlockedPort(port)) return port;
    }
    throw new Error(`the kernel kept picking ports that fetch refuses on ${host}`);
  }
  for (let attempt = 0; attempt < PICK_ATTEMPTS; attempt += 1) {
    const port = range.low + Math.floor(Math.random() * (range.high - range.low + 1));
    if (handedOut.has(port) || isFetchBlockedPort(port)) continue;
    if (await canBind(host, port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free port on ${host} between ${range.low} and ${range.high} after ${PICK_ATTEMPTS} tries`);
}

function canBind(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A port the kernel picks (from the ephemeral range), released at once. */
function kernelPickedPort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error(`could not read the port picked on ${host}`));
        return;
      }
      server.close(() => resolve(address.port));
    });
  });
}

/** True when a TCP connection to `host:port` opens; the connection is closed again at once. */
export function isPortOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** Resolves once `host:port` accepts TCP connections; rejects after `timeoutMs`. */
export async function waitForPort(host: string, port: number, timeoutMs: number): Promise<void> {
  const deadlineMs = Date.now() + timeoutMs;
  for (;;) {
    if (await isPortOpen(host, port)) return;
    if (Date.now() >= deadlineMs) throw new Error(`${host}:${port} did not accept connections within ${timeoutMs} ms`);
    await sleep(LIMITS.devServerPollIntervalMs);
  }
}
