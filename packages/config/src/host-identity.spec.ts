import { ENV, readServiceConfig } from './env';
import { NODE_ID_PATTERN, resolveProcessIdentity, type HostFacts, type InterfaceAddress } from './host-identity';

const loopback: InterfaceAddress[] = [
  { address: '127.0.0.1', family: 'IPv4', internal: true },
  { address: '::1', family: 'IPv6', internal: true },
];

/** A container on one compose network: loopback and eth0 with an IPv4 and a link-local IPv6 address. */
const container: HostFacts = {
  hostname: '3f2a9c81d0b7',
  interfaces: {
    lo: loopback,
    eth0: [
      { address: '172.18.0.7', family: 'IPv4', internal: false },
      { address: 'fe80::42:acff:fe12:7', family: 'IPv6', internal: false },
    ],
  },
};

function facts(hostname: string, interfaces: HostFacts['interfaces']): HostFacts {
  return { hostname, interfaces };
}

describe('resolveProcessIdentity', () => {
  it.each<[string, { nodeId: string; advertisedHost: string | undefined }, HostFacts, { nodeId: string; advertisedHost: string | undefined }]>([
    ['leaves explicit values alone', { nodeId: '2', advertisedHost: 'data-node-2' }, container, { nodeId: '2', advertisedHost: 'data-node-2' }],
    ['leaves an unset advertised host unset', { nodeId: '1', advertisedHost: undefined }, container, { nodeId: '1', advertisedHost: undefined }],
    ['takes the id from the container hostname', { nodeId: 'auto', advertisedHost: 'broker.example' }, container, { nodeId: '3f2a9c81d0b7', advertisedHost: 'broker.example' }],
    ['takes the address from the one non-loopback IPv4 interface', { nodeId: '7', advertisedHost: 'auto' }, container, { nodeId: '7', advertisedHost: '172.18.0.7' }],
    ['derives both at once', { nodeId: 'auto', advertisedHost: 'auto' }, container, { nodeId: '3f2a9c81d0b7', advertisedHost: '172.18.0.7' }],
    ['accepts a hostname set by compose with dashes and underscores', { nodeId: 'auto', advertisedHost: undefined }, facts('mink_data-node-3', {}), { nodeId: 'mink_data-node-3', advertisedHost: undefined }],
    [
      'reads the numeric family of Node 18.0-18.3 and an address listed on two interfaces once',
      { nodeId: '1', advertisedHost: 'auto' },
      facts('h', { lo: loopback, eth0: [{ address: '10.0.0.5', family: 4, internal: false }], 'eth0:1': [{ address: '10.0.0.5', family: 'IPv4', internal: false }] }),
      { nodeId: '1', advertisedHost: '10.0.0.5' },
    ],
    [
      'ignores a loopback address an interface does not mark internal',
      { nodeId: '1', advertisedHost: 'auto' },
      facts('h', { lo: [{ address: '127.0.1.1', family: 'IPv4', internal: false }], eth0: [{ address: '192.168.5.20', family: 'IPv4', internal: false }] }),
      { nodeId: '1', advertisedHost: '192.168.5.20' },
    ],
  ])('%s', (_, configured, host, expected) => {
    // Proves each row: `auto` is replaced from the facts, any other value passes through untouched.
    expect(resolveProcessIdentity(configured, () => host, ENV)).toEqual(expected);
  });

  it.each<[string, { nodeId: string; advertisedHost: string | undefined }, HostFacts, string]>([
    ['a dotted hostname', { nodeId: 'auto', advertisedHost: undefined }, facts('node-1.example.com', {}), "MINK_NODE_ID=auto: the hostname 'node-1.example.com' is not a valid node id"],
    ['an empty hostname', { nodeId: 'auto', advertisedHost: undefined }, facts('', {}), "MINK_NODE_ID=auto: the hostname '' is not a valid node id"],
    ['a machine with loopback only', { nodeId: '1', advertisedHost: 'auto' }, facts('h', { lo: loopback }), 'MINK_ADVERTISED_HOST=auto: this machine has no non-loopback IPv4 address'],
    [
      'a machine with IPv6 only',
      { nodeId: '1', advertisedHost: 'auto' },
      facts('h', { lo: loopback, eth0: [{ address: 'fd00::7', family: 'IPv6', internal: false }] }),
      'MINK_ADVERTISED_HOST=auto: this machine has no non-loopback IPv4 address',
    ],
    [
      'a container on two networks',
      { nodeId: '1', advertisedHost: 'auto' },
      facts('h', { eth1: [{ address: '172.19.0.4', family: 'IPv4', internal: false }], eth0: [{ address: '172.18.0.4', family: 'IPv4', internal: false }] }),
      'MINK_ADVERTISED_HOST=auto: this machine has several IPv4 addresses (172.18.0.4, 172.19.0.4)',
    ],
  ])('refuses %s, naming the variable', (_, configured, host, message) => {
    // Proves a derivation that would give an id no KV key accepts, or an address nobody can be sure reaches the process, stops it at start.
    expect(() => resolveProcessIdentity(configured, () => host, ENV)).toThrow(message);
  });

  it('does not look at the machine unless a value is auto', () => {
    // Proves explicit configuration (every process of `mink up`) never depends on the machine's hostname or interfaces.
    const host = jest.fn(() => container);
    resolveProcessIdentity({ nodeId: '1', advertisedHost: '127.0.0.1' }, host, ENV);
    expect(host).not.toHaveBeenCalled();
  });

  it('gives every id it derives from a 12-hex-digit container id the node id pattern', () => {
    // Proves Docker's default hostnames (short container ids) are always accepted.
    for (const hostname of ['000000000000', '0123456789ab', 'ffffffffffff', '9e107d9d372b']) {
      expect(resolveProcessIdentity({ nodeId: 'auto', advertisedHost: undefined }, () => facts(hostname, {}), ENV).nodeId).toMatch(NODE_ID_PATTERN);
    }
  });
});

describe('readServiceConfig: MINK_NODE_ID=auto and MINK_ADVERTISED_HOST=auto', () => {
  it('uses the derived host for the advertised address and the default bind addresses', () => {
    // Proves the Kafka and HTTP scan addresses (both built from `advertisedHost`) carry the container's address, and a
    // derived non-loopback address opens the listeners on every interface as an explicit one would.
    const config = readServiceConfig({ MINK_NODE_ID: 'auto', MINK_ADVERTISED_HOST: 'auto' }, {}, () => container);
    expect(config).toMatchObject({ nodeId: '3f2a9c81d0b7', advertisedHost: '172.18.0.7', httpBindHost: '0.0.0.0', kafkaBindHost: '0.0.0.0', grpcBindHost: '0.0.0.0' });
  });

  it('keeps the defaults when neither variable is set', () => {
    expect(readServiceConfig({}, {}, () => container)).toMatchObject({ nodeId: '1', advertisedHost: '127.0.0.1', httpBindHost: '127.0.0.1' });
  });
});
