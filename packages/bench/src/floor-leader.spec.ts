import { FloorLeader, type FloorLeaderPorts } from './floor-leader';

/** A promise with its settle functions, to hold an upload or commit open. */
function deferred(): { promise: Promise<void>; resolve: () => void; reject: (error: Error) => void } {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  return { promise, resolve, reject };
}

/** Ports whose every upload and commit waits until the test settles it, recording what was asked. */
function heldPorts() {
  const puts: { key: string; bytes: number[]; done: ReturnType<typeof deferred> }[] = [];
  const commits: ReturnType<typeof deferred>[] = [];
  const ports: FloorLeaderPorts = {
    put: (key, parts) => {
      const done = deferred();
      puts.push({ key, bytes: parts.flatMap((part) => [...part]), done });
      return done.promise;
    },
    commit: () => {
      const done = deferred();
      commits.push(done);
      return done.promise;
    },
  };
  return { ports, puts, commits };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

function request(byte: number, answers: (string | null)[][], index: number) {
  answers[index] = [];
  return { data: Uint8Array.of(byte), answer: (error: string | null) => answers[index]!.push(error) };
}

describe('FloorLeader', () => {
  it('writes one object at a time: requests that arrive meanwhile go together, in order, and each is answered after its object commits', async () => {
    // Proves the floor path gathers requests as the WAL writer does under load and never answers before the commit.
    const { ports, puts, commits } = heldPorts();
    const leader = new FloorLeader('floor/0/', ports);
    const answers: (string | null)[][] = [];
    leader.handle(request(1, answers, 0));
    await settle();
    leader.handle(request(2, answers, 1));
    leader.handle(request(3, answers, 2));
    await settle();
    expect(puts.map((put) => put.key)).toEqual(['floor/0/00000000']);
    expect(puts[0]!.bytes).toEqual([1]);

    puts[0]!.done.resolve();
    await settle();
    expect(commits).toHaveLength(1);
    expect(answers[0]).toEqual([]);
    commits[0]!.resolve();
    await settle();
    expect(answers[0]).toEqual([null]);
    expect(answers.slice(1)).toEqual([[], []]);
    expect(puts.map((put) => put.key)).toEqual(['floor/0/00000000', 'floor/0/00000001']);
    expect(puts[1]!.bytes).toEqual([2, 3]);

    puts[1]!.done.resolve();
    await settle();
    commits[1]!.resolve();
    await settle();
    expect(answers).toEqual([[null], [null], [null]]);
    expect(leader.objectsWritten).toBe(2);
  });

  it('answers every request of an object whose upload failed with the failure, commits nothing for it, and goes on', async () => {
    // Proves a failed write is never acknowledged as done.
    const { ports, puts, commits } = heldPorts();
    const leader = new FloorLeader('p/', ports);
    const answers: (string | null)[][] = [];
    leader.handle(request(1, answers, 0));
    await settle();
    leader.handle(request(2, answers, 1));
    puts[0]!.done.reject(new Error('S3 said no'));
    await settle();
    expect(commits).toHaveLength(0);
    expect(answers[0]).toEqual(['object p/00000000: S3 said no']);
    expect(puts).toHaveLength(2);
    puts[1]!.done.resolve();
    await settle();
    commits[0]!.resolve();
    await settle();
    expect(answers[1]).toEqual([null]);
  });

  it('answers with the failure when the commit is refused', async () => {
    // Proves an upload alone does not acknowledge: the commit must be acked too.
    const { ports, puts, commits } = heldPorts();
    const leader = new FloorLeader('p/', ports);
    const answers: (string | null)[][] = [];
    leader.handle(request(7, answers, 0));
    await settle();
    puts[0]!.done.resolve();
    await settle();
    commits[0]!.reject(new Error('stream unavailable'));
    await settle();
    expect(answers[0]).toEqual(['object p/00000000: stream unavailable']);
  });
});
