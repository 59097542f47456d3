import { createServer, type Server } from 'node:net';
import { ephemeralRange, freePort, listenPortRange, LISTEN_PORT_FLOOR, parsePortRange } from './ports';

describe('listenPortRange', () => {
  it.each([
    // [ephemeral range, range picked from]
    [{ low: 32_768, high: 60_999 }, { low: LISTEN_PORT_FLOOR, high: 32_767 }],
    [{ low: 49_152, high: 65_535 }, { low: LISTEN_PORT_FLOOR, high: 49_151 }],
    [{ low: 11_000, high: 60_999 }, { low: LISTEN_PORT_FLOOR, high: 10_999 }],
    [{ low: 10_999, high: 60_999 }, null],
    [{ low: 1_024, high: 65_535 }, null],
  ])('below the ephemeral range %o picks from %o', (ephemeral, expected) => {
    expect(listenPortRange(ephemeral)).toEqual(expected);
  });
});

describe('parsePortRange', () => {
  it.each([
    ['32768\t60999\n', { low: 32_768, high: 60_999 }],
    ['  1024 65535 ', { low: 1_024, high: 65_535 }],
    ['60999\t32768', null],
    ['32768', null],
    ['a b', null],
    ['0 100', null],
    ['1 70000', null],
  ])('%j → %o', (text, expected) => {
    expect(parsePortRange(text)).toEqual(expected);
  });
});

describe('freePort', () => {
  it('hands out distinct ports below the ephemeral range that can be bound', async () => {
    const ports: number[] = [];
    for (let i = 0; i < 50; i += 1) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
    const ephemeral = ephemeralRange();
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(LISTEN_PORT_FLOOR);
      expect(port).toBeLessThan(ephemeral.low);
    }
    const servers = await Promise.all(ports.slice(0, 5).map((port) => listen(port)));
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  });
});

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port }, () => resolve(server));
  });
}
