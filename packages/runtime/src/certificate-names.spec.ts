import { subjectAltNamesOf } from './certificate-names';

describe('subjectAltNamesOf', () => {
  it.each([
    ['172.18.0.5', 'a1b2c3d4e5f6', [], [{ type: 'ip', value: '172.18.0.5' }, { type: 'dns', value: 'a1b2c3d4e5f6' }]],
    ['172.18.0.5', 'a1b2c3d4e5f6', ['data-node'], [{ type: 'ip', value: '172.18.0.5' }, { type: 'dns', value: 'a1b2c3d4e5f6' }, { type: 'dns', value: 'data-node' }]],
    ['kafka-1.example.com', 'kafka-1', ['DNS:Kafka-1.example.com', 'IP:10.0.0.7'], [{ type: 'dns', value: 'kafka-1.example.com' }, { type: 'dns', value: 'kafka-1' }, { type: 'ip', value: '10.0.0.7' }]],
    ['::1', 'host', ['ip:::1', ' dns:host ', ''], [{ type: 'ip', value: '::1' }, { type: 'dns', value: 'host' }]],
    ['127.0.0.1', '', ['localhost'], [{ type: 'ip', value: '127.0.0.1' }, { type: 'dns', value: 'localhost' }]],
  ])('names %p, hostname %p and extra %p as %p', (advertised, hostname, extra, expected) => {
    // Proves a node's certificate carries the address clients are given and the names they bootstrap from, each once.
    expect(subjectAltNamesOf(advertised, hostname, extra)).toEqual(expected);
  });

  it.each([
    [['IP:data-node'], 'IP:data-node is not an IP address'],
    [['DNS:has space'], 'DNS:has space is not a DNS name'],
    [['bad/name'], 'bad/name is not a DNS name'],
  ])('refuses the extra names %p, naming the entry', (extra, message) => {
    // Proves a mistyped setting stops the start instead of issuing a certificate no client could match.
    expect(() => subjectAltNamesOf('10.0.0.1', 'host', extra)).toThrow(message);
  });

  it('refuses a certificate without any name', () => {
    expect(() => subjectAltNamesOf('', '', [])).toThrow('at least one name');
  });
});
