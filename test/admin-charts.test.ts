// The overview charts' axes: value ticks fall on round values for what they measure (whole counts,
// 1-2-5 decimals, a clock's steps for ages) and time labels on round UTC clock times, at most five
// of each so they fit a phone's screen.
import { describe, expect, it } from 'vitest';
import { timeTicks, valueTicks } from '../src/admin/dashboard/charts.tsx';

describe('value ticks', () => {
  it('count axes step by whole 1, 2 or 5 times a power of ten, from 0 to a top at or above the data', () => {
    expect(valueTicks(2, 'count')).toEqual([0, 1, 2]);
    expect(valueTicks(3, 'count')).toEqual([0, 1, 2, 3]);
    expect(valueTicks(7, 'count')).toEqual([0, 2, 4, 6, 8]);
    expect(valueTicks(37, 'count')).toEqual([0, 10, 20, 30, 40]);
    expect(valueTicks(101, 'count')).toEqual([0, 50, 100, 150]);
    expect(valueTicks(1234, 'count')).toEqual([0, 500, 1000, 1500]);
  });

  it('decimal axes take tenths and hundredths, exactly (no 0.30000000000000004)', () => {
    expect(valueTicks(0.1, 'decimal')).toEqual([0, 0.05, 0.1]);
    expect(valueTicks(0.3, 'decimal')).toEqual([0, 0.1, 0.2, 0.3]);
    expect(valueTicks(1.3, 'decimal')).toEqual([0, 0.5, 1, 1.5]);
    expect(valueTicks(2.4, 'decimal')).toEqual([0, 1, 2, 3]);
  });

  it('ages step as a clock reads: seconds, minutes, hours, days', () => {
    expect(valueTicks(60, 'seconds')).toEqual([0, 15, 30, 45, 60]);
    expect(valueTicks(500, 'seconds')).toEqual([0, 300, 600]);
    expect(valueTicks(5400, 'seconds')).toEqual([0, 1800, 3600, 5400]);
    expect(valueTicks(10 * 3600, 'seconds')).toEqual([0, 3 * 3600, 6 * 3600, 9 * 3600, 12 * 3600]);
    expect(valueTicks(3 * 86_400, 'seconds')).toEqual([0, 86_400, 2 * 86_400, 3 * 86_400]);
  });

  it('never has more than five ticks, and the top covers the data', () => {
    for (const scale of ['count', 'decimal', 'seconds'] as const) {
      for (const max of [0.07, 1, 2.5, 9, 11, 99, 101, 999, 86_399, 1e6]) {
        const ticks = valueTicks(max, scale);
        expect(ticks.length, `${scale} ${max}`).toBeLessThanOrEqual(5);
        expect(ticks.at(-1), `${scale} ${max}`).toBeGreaterThanOrEqual(max);
        expect(ticks[0]).toBe(0);
      }
    }
  });
});

describe('time ticks', () => {
  const at = (text: string) => Date.parse(`2026-12-01T${text}Z`);
  const clock = (ticks: number[]) => ticks.map((ms) => new Date(ms).toISOString().slice(11, 16));

  it('label an hour every 15 minutes on the quarter hours, whatever minute it starts at', () => {
    expect(clock(timeTicks(at('18:43:00'), at('19:43:00')))).toEqual(['18:45', '19:00', '19:15', '19:30']);
    expect(clock(timeTicks(at('18:00:00'), at('19:00:00')))).toEqual(['18:00', '18:15', '18:30', '18:45', '19:00']);
  });

  it('label a day every 6 hours on 00:00, 06:00, 12:00 and 18:00', () => {
    expect(clock(timeTicks(at('19:45:00') - 86_400_000, at('19:45:00')))).toEqual(['00:00', '06:00', '12:00', '18:00']);
  });
});
