import { hostname, networkInterfaces } from 'node:os';

/**
 * Process ids (data node, coordinator, gateway, tiering worker) become NATS subject tokens and KV key
 * tokens, so they are limited to the characters every KV key accepts.
 */
export const NODE_ID_PATTERN = /^[A-Za-z0-9_-]+$/;

/**
 * The value of `MINK_NODE_ID` or `MINK_ADVERTISED_HOST` that asks the process to derive it from the machine it
 * runs on: the id from the hostname, the advertised host from the one non-loopback IPv4 address. Meant for
 * replicas of one docker-compose service (`docker compose up --scale data-node=5`), which share every
 * environment variable but each run in a container of their own.
 */
export const AUTO_IDENTITY = 'auto';

/** One address of a network interface, as `os.networkInterfaces()` lists it (`family` was a number in Node 18.0–18.3). */
export interface InterfaceAddress {
  address: string;
  family: string | number;
  internal: boolean;
}

/** What a process knows about the machine it runs on, read once at start (`os.hostname()`, `os.networkInterfaces()`). */
export interface HostFacts {
  hostname: string;
  interfaces: Readonly<Record<string, readonly InterfaceAddress[] | undefined>>;
}

/** The identity a process announces: its node id and the host other processes and clients reach it at. */
export interface ProcessIdentity {
  nodeId: string;
  /** Undefined when `MINK_ADVERTISED_HOST` is not set: the configured default applies. */
  advertisedHost: string | undefined;
}

/** The facts of the machine this process runs on. */
export function currentHostFacts(): HostFacts {
  return { hostname: hostname(), interfaces: networkInterfaces() };
}

/**
 * Replaces `auto` in the node id and the advertised host by what `host` says, and returns other values as
 * they are. The hostname of a container is its short id (12 hex digits) unless compose sets one, so every
 * replica of a scaled service gets an id of its own that stays the same across restarts of that container
 * (a recreated container is a new node). The advertised host is the container's IPv4 address on the compose
 * network rather than its hostname, because Docker's DNS does not resolve a container's default hostname in
 * general. `host` is only asked when a value is `auto`.
 *
 * Refuses, naming the variable: a hostname that is not a valid node id (`NODE_ID_PATTERN`: a dotted name,
 * for instance), a machine with no non-loopback IPv4 address, and one with several (the process cannot know
 * which one the others reach: set `MINK_ADVERTISED_HOST` to it).
 */
export function resolveProcessIdentity(
  configured: ProcessIdentity,
  host: () => HostFacts,
  names: { nodeId: string; advertisedHost: string },
): ProcessIdentity {
  const facts = configured.nodeId === AUTO_IDENTITY || configured.advertisedHost === AUTO_IDENTITY ? host() : undefined;
  return {
    nodeId: facts && configured.nodeId === AUTO_IDENTITY ? nodeIdFromHostname(facts.hostname, names.nodeId) : configured.nodeId,
    advertisedHost: facts && configured.advertisedHost === AUTO_IDENTITY ? addressFromInterfaces(facts.interfaces, names.advertisedHost) : configured.advertisedHost,
  };
}

function nodeIdFromHostname(name: string, variable: string): string {
  if (!NODE_ID_PATTERN.test(name)) {
    throw new Error(`${variable}=${AUTO_IDENTITY}: the hostname '${name}' is not a valid node id (${NODE_ID_PATTERN}); set ${variable} explicitly`);
  }
  return name;
}

function addressFromInterfaces(interfaces: HostFacts['interfaces'], variable: string): string {
  const addresses = new Set<string>();
  for (const entries of Object.values(interfaces)) {
    for (const entry of entries ?? []) {
      const ipv4 = entry.family === 'IPv4' || entry.family === 4;
      if (ipv4 && !entry.internal && !entry.address.startsWith('127.')) addresses.add(entry.address);
    }
  }
  if (addresses.size === 1) return [...addresses][0]!;
  const found = addresses.size === 0 ? 'no non-loopback IPv4 address' : `several IPv4 addresses (${[...addresses].sort().join(', ')})`;
  throw new Error(`${variable}=${AUTO_IDENTITY}: this machine has ${found}; set ${variable} to the address the other processes reach`);
}
