// The spool behind the delivery log and the rejection log: bounded, oldest dropped first, one flush at a time.
import { describe, expect, it } from 'vitest';
import { Spool } from '../src/lib/spool.ts';

describe('spool', () => {
  it('keeps at most its capacity, dropping the oldest, and writes the rest in order', async () => {
    const lost: number[] = [];
    const written: number[][] = [];
    const spool = new Spool<number, string>({
      capacity: 3,
      write: async (records, target) => {
        expect(target).toBe('db');
        written.push([...records]);
      },
      onLost: (count) => lost.push(count),
    });
    for (const n of [1, 2, 3, 4, 5]) spool.add(n);
    expect(spool.size).toBe(3);
    await spool.flush('db');
    expect(written).toEqual([[3, 4, 5]]);
    expect(lost).toEqual([1, 1]);
    await spool.flush('db');
    expect(written).toHaveLength(1);
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
