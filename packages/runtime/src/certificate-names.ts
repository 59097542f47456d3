import { isIP } from 'node:net';

/** One subjectAltName of a certificate: a DNS name or an IP address. */
export interface SubjectAltName {
  type: 'dns' | 'ip';
  value: string;
}

/**
 * The subjectAltNames of the certificate a data node issues itself for its Kafka listener: its advertised host
 * (what Metadata hands clients), its hostname (a container's short id, which Docker's DNS resolves) and the
 * extra names it is told (`MINK_KAFKA_TLS_EXTRA_NAMES`, e.g. the compose service name clients bootstrap from).
 * Each name is `DNS:<name>`, `IP:<address>` or bare (an IP address when it parses as one, else a DNS name);
 * names are compared without case for DNS and kept once, in that order. A malformed entry throws, naming it.
 */
export function subjectAltNamesOf(advertisedHost: string, hostname: string, extraNames: readonly string[]): SubjectAltName[] {
  const names: SubjectAltName[] = [];
  const seen = new Set<string>();
  for (const entry of [advertisedHost, hostname, ...extraNames]) {
    const name = subjectAltNameOf(entry.trim());
    if (name === null) continue;
    const key = `${name.type}:${name.type === 'dns' ? name.value.toLowerCase() : name.value}`;
    if (seen.has(key)) continue;
    seen.add(key);
    names.push(name);
  }
  if (names.length === 0) throw new Error('a certificate needs at least one name: the advertised host is empty');
  return names;
}

const DNS_NAME = /^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/i;

function subjectAltNameOf(entry: string): SubjectAltName | null {
  if (entry === '') return null;
  const prefix = /^(dns|ip):/i.exec(entry);
  const value = prefix ? entry.slice(prefix[0].length).trim() : entry;
  const type = prefix ? (prefix[1]!.toLowerCase() as 'dns' | 'ip') : isIP(value) !== 0 ? 'ip' : 'dns';
  if (type === 'ip' && isIP(value) === 0) throw new Error(`${entry} is not an IP address`);
  if (type === 'dns' && !DNS_NAME.test(value)) throw new Error(`${entry} is not a DNS name`);
  return { type, value };
}
