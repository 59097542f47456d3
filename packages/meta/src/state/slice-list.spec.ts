import { firstSliceOf, slicesOf, type DataSlice } from './view';

const slice = (startOffset: number): DataSlice => ({ object: `streams/${startOffset}`, startOffset, endOffset: startOffset + 1, position: 0, length: 1 });
const list = (from: number, count: number): DataSlice[] => Array.from({ length: count }, (_, index) => slice(from + index));

describe('slicesOf', () => {
  it('is the array itself for a stream without history', () => {
    const slices = list(0, 3);
    expect(slicesOf({ slices })).toBe(slices);
    expect(slicesOf({ slices, history: [] })).toBe(slices);
    expect(firstSliceOf({ slices })).toBe(slices[0]);
    expect(firstSliceOf({ slices: [] })).toBeUndefined();
  });

  it.each<[string, number, number]>([
    ['history and newest slices', 3, 4],
    ['history only', 5, 0],
    ['one of each', 1, 1],
  ])('reads %s as one list, by index and by range, as the array of both would', (_name, inHistory, newest) => {
    const whole = list(10, inHistory + newest);
    const joined = slicesOf({ history: whole.slice(0, inHistory), slices: whole.slice(inHistory) });
    expect(joined.length).toBe(whole.length);
    for (let index = -whole.length - 1; index <= whole.length; index++) expect(joined.at(index)).toBe(whole.at(index));
    for (let start = -whole.length - 1; start <= whole.length + 1; start++) {
      for (let end = -whole.length - 1; end <= whole.length + 1; end++) expect(joined.slice(start, end)).toEqual(whole.slice(start, end));
    }
    expect(joined.slice()).toEqual(whole);
    expect(firstSliceOf({ history: whole.slice(0, inHistory), slices: whole.slice(inHistory) })).toBe(whole[0]);
  });
});
