// An open-loop sender for the replay-flood bench (bench/lib/replay-flood.ts): requests at a fixed rate
// whatever the answers, each answer's status and latency; used on the main thread for the genuine
// deliveries and on a thread of its own for the replays (bench/lib/replay-sender.ts).
import type { Pool } from 'undici';
import type { PreparedRequest } from './load.ts';

export interface Answer {
  status: number;
  ms: number;
}

export const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sends `next()` every 1/perSecond s for `seconds` without waiting for answers: each answer's status and latency. */
export async function openLoop(
  pool: Pool,
  perSecond: number,
  seconds: number,
  next: () => PreparedRequest,
): Promise<Answer[]> {
  const answers: Promise<Answer>[] = [];
  const started = performance.now();
  for (let index = 0; index < Math.round(perSecond * seconds); index += 1) {
    const due = started + (index * 1000) / perSecond;
    await pause(Math.max(0, due - performance.now()));
    const prepared = next();
    const sentAt = performance.now();
    answers.push(
      pool
        .request({ method: 'POST', path: prepared.path, headers: prepared.headers, body: prepared.body })
        .then(async (response) => {
          await response.body.dump();
          return { status: response.statusCode, ms: performance.now() - sentAt };
        })
        .catch(() => ({ status: 0, ms: performance.now() - sentAt })),
    );
  }
  return Promise.all(answers);
}
