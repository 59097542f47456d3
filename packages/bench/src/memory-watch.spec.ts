import { memoryFiguresOf, proportionalBytesOfSmapsRollup, renderMemory, residentMemoryOfStatus, type MemorySample } from './memory-watch';

const STATUS = ['Name:\tnode', 'VmHWM:\t  200000 kB', 'VmRSS:\t  150000 kB', 'RssAnon:\t  100000 kB', 'RssFile:\t   49000 kB', 'RssShmem:\t    1000 kB', 'Threads:\t11'].join('\n');

describe('residentMemoryOfStatus', () => {
  it.each([
    [STATUS, { rssBytes: 150_000 * 1024, anonBytes: 100_000 * 1024, fileBytes: 49_000 * 1024, shmemBytes: 1_000 * 1024, pssBytes: 0 }],
    ['VmRSS:\t 10 kB', { rssBytes: 10 * 1024, anonBytes: 0, fileBytes: 0, shmemBytes: 0, pssBytes: 0 }],
    ['Name:\tzombie\nState:\tZ', null],
  ])('reads %p as %p', (status, expected) => {
    // Proves the bench reads the current RSS and its parts, not the peak (VmHWM), and nothing from a process without memory.
    expect(residentMemoryOfStatus(status)).toEqual(expected);
  });
});

describe('memoryFiguresOf', () => {
  const MiB = 1024 * 1024;
  const entry = (role: string, pid: number, rss: number, anon = rss / 2) => ({ role, pid, rssBytes: rss * MiB, anonBytes: anon * MiB, fileBytes: (rss - anon) * MiB, shmemBytes: 0, pssBytes: (anon + 10) * MiB });
  const samples: MemorySample[] = [
    { atMs: 0, processes: [entry('data-node', 1, 100), entry('data-node', 2, 100), entry('gateway', 3, 80)] },
    // The peak together: no single process at its own peak.
    { atMs: 1_000, processes: [entry('data-node', 1, 150), entry('data-node', 2, 140), entry('gateway', 3, 90)] },
    { atMs: 2_000, processes: [entry('data-node', 1, 160), entry('data-node', 2, 100), entry('gateway', 3, 80)] },
    { atMs: 3_000, processes: [] },
    // A restarted data node (new pid) counts as one more process of its role.
    { atMs: 4_000, processes: [entry('data-node', 4, 90), entry('data-node', 2, 100), entry('gateway', 3, 85)] },
  ];

  it('takes the peak of all processes together from one sample, each role’s peak process, and the first and last sums', () => {
    const figures = memoryFiguresOf(samples);
    expect(figures.samples).toBe(4);
    expect(figures.together).toEqual({ rssBytes: 380 * MiB, anonBytes: 190 * MiB, fileBytes: 190 * MiB, shmemBytes: 0, pssBytes: 220 * MiB, processes: 3, atMs: 1_000 });
    expect(figures.roles).toEqual([
      { role: 'data-node', processes: 3, rssMaxBytes: 160 * MiB, anonMaxBytes: 80 * MiB },
      { role: 'gateway', processes: 1, rssMaxBytes: 90 * MiB, anonMaxBytes: 45 * MiB },
    ]);
    expect([figures.firstTogetherBytes, figures.lastTogetherBytes]).toEqual([280 * MiB, 275 * MiB]);
  });

  it('has no figures without a sample', () => {
    expect(memoryFiguresOf([])).toEqual({ samples: 0, together: null, roles: [], firstTogetherBytes: null, lastTogetherBytes: null });
  });
});

describe('renderMemory', () => {
  const MiB = 1024 * 1024;
  it('states the peak together against the goal, its parts, the first and last sums and each role', () => {
    const lines = renderMemory(
      {
        samples: 120,
        together: { rssBytes: 768 * MiB, anonBytes: 512 * MiB, fileBytes: 250 * MiB, shmemBytes: 6 * MiB, pssBytes: 600 * MiB, processes: 7, atMs: 5 },
        roles: [{ role: 'data-node', processes: 3, rssMaxBytes: 160 * MiB, anonMaxBytes: 120 * MiB }],
        firstTogetherBytes: 600 * MiB,
        lastTogetherBytes: 700 * MiB,
      },
      512 * MiB,
    );
    expect(lines.join('\n')).toMatch(/together at peak: 768(\.0)? MiB in 7 processes .*goal 512(\.0)? MiB: missed by 1\.50 ×/);
    expect(lines.join('\n')).toMatch(/data-node: 3 processes, largest 160(\.0)? MiB/);
    expect(renderMemory(null, 512 * MiB)).toEqual([]);
  });
});

describe('proportionalBytesOfSmapsRollup', () => {
  it.each([
    ['55d0c0a00000-7ffd1b5fe000 ---p 00000000 00:00 0 [rollup]\nRss:              150000 kB\nPss:               90000 kB\nPss_Anon:          80000 kB', 90_000 * 1024],
    ['', 0],
  ])('reads the Pss line of %p', (text, expected) => {
    expect(proportionalBytesOfSmapsRollup(text)).toBe(expected);
  });
});
