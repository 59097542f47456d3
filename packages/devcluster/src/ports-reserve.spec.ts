import { ephemeralRange, freePort, listenPortRange, reservePorts } from './ports';

// In a file of its own: the reservations last as long as the module, and would starve the other tests of ports.
describe('reservePorts', () => {
  it('keeps freePort from handing out a reserved port', async () => {
    // Proves a fixed port a service binds later (a data node's Kafka port) is never picked for another one.
    const range = listenPortRange(ephemeralRange());
    if (range === null) return;
    // Every port of the range but ten is reserved; the picks must come from those ten.
    const open = new Set(Array.from({ length: 10 }, (_, index) => range.low + Math.floor(((range.high - range.low) * (index + 1)) / 11)));
    const reserved: number[] = [];
    for (let port = range.low; port <= range.high; port++) if (!open.has(port)) reserved.push(port);
    reservePorts(reserved);
    const picked = await Promise.all(Array.from({ length: 3 }, () => freePort().catch(() => null)));
    for (const port of picked) if (port !== null) expect(open.has(port)).toBe(true);
  });
});
