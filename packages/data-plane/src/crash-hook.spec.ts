import { crashHookOf } from './crash-hook';
import type { WalPoint } from '@mink/s3stream';

describe('crashHookOf', () => {
  it.each<[string, Parameters<typeof crashHookOf>[0], WalPoint[], number[]]>([
    ['the first occurrence of the point', { point: 'wal-uploaded', occurrence: 1 }, ['uploading', 'uploaded', 'committed', 'uploading', 'uploaded'], [1]],
    ['the third occurrence, other points not counted', { point: 'wal-committed', occurrence: 3 }, ['uploading', 'uploaded', 'committed', 'uploading', 'uploaded', 'committed', 'uploading', 'uploaded', 'committed', 'committed'], [8]],
    ['an occurrence never reached', { point: 'wal-uploading', occurrence: 5 }, ['uploading', 'uploading', 'uploaded'], []],
  ])('crashes at %s and only there', (_case, crashAt, points, expected) => {
    // Proves the hook kills at exactly the point and occurrence a fault test names, once, whatever else the WAL reaches.
    const crashedAt: number[] = [];
    let index = 0;
    const hook = crashHookOf(crashAt, () => crashedAt.push(index));
    for (const point of points) {
      hook(point);
      index++;
    }
    expect(crashedAt).toEqual(expected);
  });
});
