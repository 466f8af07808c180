// The spool behind the delivery log and the rejection log: bounded, oldest dropped first, one flush at a time.
import { describe, expect, it } from 'vitest';
import { Spool } from '../src/lib/spool.ts';

describe('spool', () => {
  it('keeps at most its capacity, dropping the oldest, and writes the rest in order', async () => {
    const lost: number[] = [];
    const counted: number[] = [];
    const written: number[][] = [];
    let now = 0;
    const spool = new Spool<number, string>({
      capacity: 3,
      write: async (records, target) => {
        expect(target).toBe('db');
        written.push([...records]);
      },
      countLost: (count) => counted.push(count),
      onLost: (count) => lost.push(count),
      lostReportMs: 1000,
      now: () => now,
    });
    for (const n of [1, 2, 3, 4, 5]) spool.add(n);
    expect(spool.size).toBe(3);
    await spool.flush('db');
    expect(written).toEqual([[3, 4, 5]]);
    // Every drop counted at once; reported at the first drop, the next one only a second later.
    expect(counted).toEqual([1, 1]);
    expect(lost).toEqual([1]);
    now = 1000;
    await spool.flush('db');
    expect(written).toHaveLength(1);
    expect(lost).toEqual([1, 1]);
  });

  it('drops in constant time: a long flood past capacity keeps the newest, in order', async () => {
    const written: number[][] = [];
    const spool = new Spool<number, null>({
      capacity: 1000,
      write: async (records) => void written.push([...records]),
    });
    for (let n = 0; n < 200_000; n++) spool.add(n);
    expect(spool.size).toBe(1000);
    await spool.flush(null);
    expect(written[0]).toEqual(Array.from({ length: 1000 }, (_, n) => 199_000 + n));
  });

  it("folds a record into the newest waiting one of its key when merge says so, and a dropped record's key is freed", async () => {
    type Entry = { key: string; kind: string; n: number };
    const written: Entry[][] = [];
    const spool = new Spool<Entry, null>({
      capacity: 3,
      write: async (records) => void written.push(records.map((record) => ({ ...record }))),
      fold: {
        key: (record) => record.key,
        merge: (waiting, record) => {
          if (waiting.kind !== 'dup' || record.kind !== 'dup') return false;
          waiting.n += record.n;
          return true;
        },
      },
    });
    const add = (key: string, kind: string) => spool.add({ key, kind, n: 1 });
    add('a', 'dup');
    add('a', 'dup');
    add('b', 'new');
    add('a', 'dup');
    expect(spool.size).toBe(2);
    // A change of kind starts a record; the duplicate after it folds into that one, not the first.
    add('a', 'failed');
    add('a', 'dup');
    add('a', 'dup');
    expect(spool.size).toBe(3);
    await spool.flush(null);
    expect(written).toEqual([
      [
        { key: 'b', kind: 'new', n: 1 },
        { key: 'a', kind: 'failed', n: 1 },
        { key: 'a', kind: 'dup', n: 2 },
      ],
    ]);
    // After a flush nothing waits: the next duplicate starts a record of its own.
    add('a', 'dup');
    expect(spool.size).toBe(1);
    // Dropped for room, the newest of its key no longer takes repeats: the next one takes a slot.
    add('c', 'new');
    add('d', 'new');
    add('e', 'new');
    add('a', 'dup');
    expect(spool.size).toBe(3);
    await spool.flush(null);
    expect(written[1]).toEqual([
      { key: 'd', kind: 'new', n: 1 },
      { key: 'e', kind: 'new', n: 1 },
      { key: 'a', kind: 'dup', n: 1 },
    ]);
  });

  it('runs one write at a time: a flush called during another waits, then writes what came since', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const written: string[][] = [];
    let inFlight = 0;
    const spool = new Spool<string, null>({
      capacity: 10,
      write: async (records) => {
        inFlight += 1;
        expect(inFlight).toBe(1);
        if (written.length === 0) await gate;
        written.push([...records]);
        inFlight -= 1;
      },
    });
    spool.add('a');
    const first = spool.flush(null);
    spool.add('b');
    const second = spool.flush(null);
    release();
    await Promise.all([first, second]);
    expect(written).toEqual([['a'], ['b']]);
  });

  it('reports a failed write as lost and keeps accepting records', async () => {
    const lost: [number, string][] = [];
    let fail = true;
    const written: number[] = [];
    const spool = new Spool<number, null>({
      capacity: 5,
      write: async (records) => {
        if (fail) throw new Error('database down');
        written.push(...records);
      },
      onLost: (count, reason) => lost.push([count, reason]),
    });
    spool.add(1);
    spool.add(2);
    await spool.flush(null);
    expect(lost).toEqual([[2, 'write_failed']]);
    fail = false;
    spool.add(3);
    await spool.flush(null);
    expect(written).toEqual([3]);
  });
});
