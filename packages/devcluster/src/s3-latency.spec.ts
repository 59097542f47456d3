import { describeS3Latency, parseS3Latency, s3LatencyArguments } from './s3-latency';
// The sampler s3rver-main runs, plain CommonJS beside it.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const sampler = require('../bin/s3-latency.js') as {
  Z_P99: number;
  lognormalDelayMs(latency: { medianMs: number; p99Ms: number }, normal: number): number;
  standardNormal(uniform1: number, uniform2: number): number;
  sampleDelayMs(latency: { medianMs: number; p99Ms: number }): number;
};

describe('parseS3Latency', () => {
  it.each<[string, { medianMs: number; p99Ms: number }]>([
    ['20ms', { medianMs: 20, p99Ms: 20 }],
    ['20', { medianMs: 20, p99Ms: 20 }],
    ['20ms:80ms', { medianMs: 20, p99Ms: 80 }],
    ['0.5s:2s', { medianMs: 500, p99Ms: 2_000 }],
    ['15ms:15ms', { medianMs: 15, p99Ms: 15 }],
  ])('%p → %p', (text, latency) => {
    expect(parseS3Latency(text)).toEqual(latency);
  });

  it.each<[string, string]>([
    ['', 'is not a duration'],
    ['fast', 'is not a duration'],
    ['0ms', 'must be greater than zero'],
    ['80ms:20ms', 'must not be below the median'],
    ['20ms:80ms:90ms', 'is not <median> or <median>:<p99>'],
    ['20ms:11s', 'at most 10 s'],
  ])('refuses %p (%s)', (text, message) => {
    expect(() => parseS3Latency(text)).toThrow(message);
  });

  it('describes and passes a latency on', () => {
    expect(describeS3Latency({ medianMs: 20, p99Ms: 20 })).toBe('20 ms');
    expect(describeS3Latency({ medianMs: 20, p99Ms: 80 })).toBe('20 ms median, 80 ms p99 (log-normal)');
    expect(s3LatencyArguments(undefined)).toEqual([]);
    expect(s3LatencyArguments({ medianMs: 20, p99Ms: 80 })).toEqual(['--latency-median-ms', '20', '--latency-p99-ms', '80']);
  });
});

describe('bin/s3-latency.js', () => {
  it.each<[number, number]>([
    [0, 20],
    [sampler.Z_P99, 80],
    [-sampler.Z_P99, 5],
    [sampler.Z_P99 / 2, 40],
  ])('a standard-normal draw of %p is %p ms for a median of 20 ms and a p99 of 80 ms', (normal, delayMs) => {
    expect(sampler.lognormalDelayMs({ medianMs: 20, p99Ms: 80 }, normal)).toBeCloseTo(delayMs, 9);
  });

  it('is a fixed delay when the p99 is the median, and refuses a p99 below it', () => {
    for (const normal of [-3, 0, 1, 3]) expect(sampler.lognormalDelayMs({ medianMs: 20, p99Ms: 20 }, normal)).toBe(20);
    expect(() => sampler.lognormalDelayMs({ medianMs: 20, p99Ms: 10 }, 0)).toThrow('0 < median <= p99');
  });

  it('draws standard-normal values by Box–Muller', () => {
    expect(sampler.standardNormal(1, 0)).toBeCloseTo(0, 12);
    expect(sampler.standardNormal(Math.exp(-0.5), 0)).toBeCloseTo(1, 12);
    expect(sampler.standardNormal(Math.exp(-0.5), 0.5)).toBeCloseTo(-1, 12);
  });

  it('has the asked median and p99 over many draws', () => {
    const draws = Array.from({ length: 20_000 }, () => sampler.sampleDelayMs({ medianMs: 20, p99Ms: 80 })).sort((a, b) => a - b);
    expect(draws[10_000]!).toBeGreaterThan(18);
    expect(draws[10_000]!).toBeLessThan(22);
    expect(draws[19_800]!).toBeGreaterThan(65);
    expect(draws[19_800]!).toBeLessThan(98);
  });
});
