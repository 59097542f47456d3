import { createServer, type Server } from 'node:net';
import { ephemeralRange, freePort, isFetchBlockedPort, listenPortRange, LISTEN_PORT_FLOOR, parsePortRange } from './ports';

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

describe('isFetchBlockedPort', () => {
  it.each([
    [10_080, true],
    [6_667, true],
    [5_060, true],
    [22, true],
    [10_079, false],
    [10_081, false],
    [8_080, false],
    [4_222, false],
  ])('port %p: %p', (port, blocked) => {
    expect(isFetchBlockedPort(port)).toBe(blocked);
  });

  it('is what fetch refuses: a request to a blocked port fails with "bad port" before any connection', async () => {
    await expect(fetch('http://127.0.0.1:10080/')).rejects.toMatchObject({ cause: { message: 'bad port' } });
  });

  it('is never handed out by freePort, even when the random draw lands on it', async () => {
    // Proves the cause of a flaky end-to-end test (a data node's HTTP port drawn as 10080, which fetch refused) is gone.
    const range = listenPortRange(ephemeralRange());
    if (range === null) return;
    const onBlocked = (10_080 - range.low + 0.5) / (range.high - range.low + 1);
    const random = jest.spyOn(Math, 'random').mockReturnValueOnce(onBlocked);
    try {
      const port = await freePort();
      expect(random.mock.calls.length).toBeGreaterThanOrEqual(2);
      expect(port).not.toBe(10_080);
    } finally {
      random.mockRestore();
    }
  });
});

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port }, () => resolve(server));
  });
}
