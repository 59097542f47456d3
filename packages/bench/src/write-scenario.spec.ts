import { acknowledgedIds, benchRows, writeCallCount } from './write-scenario';

describe('the rows of a write scenario', () => {
  const settings = { rows: 25, batchRows: 10, firstId: 100 };

  it('gives each call consecutive ids from the first id, the last call the remainder', () => {
    // Proves calls never overlap or leave gaps, so every id written is known from the call index alone.
    expect(writeCallCount(25, 10)).toBe(3);
    expect(writeCallCount(20, 10)).toBe(2);
    expect(benchRows(settings, 0).map((row) => row.id)).toEqual([100, 101, 102, 103, 104, 105, 106, 107, 108, 109]);
    expect(benchRows(settings, 2).map((row) => row.id)).toEqual([120, 121, 122, 123, 124]);
    expect(benchRows(settings, 3)).toEqual([]);
    expect(benchRows(settings, 0)[1]).toEqual({ id: 101, name: 'sensor-101', value: 101 / 7 });
  });

  it('lists the ids of the acknowledged calls only, in id order', () => {
    // Proves the lookups read only keys whose put was acknowledged, whatever order the calls finished in.
    expect(acknowledgedIds(settings, [2, 0])).toEqual([100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 120, 121, 122, 123, 124]);
    expect(acknowledgedIds(settings, [])).toEqual([]);
  });
});
