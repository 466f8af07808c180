// The tiers stay true (test/tiers.ts): a file that starts a process says so in its header, with why,
// so the fast tier (`--project node`) never waits on a child process; and the second Node line's list
// names files that exist.
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NODE_LINE_FILES, nodeTestFiles, processFiles, processReason } from './tiers.ts';

/** What starts a process from a test file: the process helpers, the browser, child_process. */
const STARTS_A_PROCESS = /helpers\/process\.ts|helpers\/browser\.ts|playwright-core|node:child_process|runCliProcess/;

describe('the test tiers', () => {
  it('mark every file that starts a process, and only those, with a reason', () => {
    const starting = nodeTestFiles().filter(
      (file) => file !== 'test/tiers.test.ts' && STARTS_A_PROCESS.test(readFileSync(file, 'utf8')),
    );
    expect(processFiles()).toEqual(starting);
    for (const file of starting) expect(processReason(file)?.length, file).toBeGreaterThan(20);
  });

  it('list only existing files for the second Node line', () => {
    for (const file of Object.keys(NODE_LINE_FILES)) expect(existsSync(file), file).toBe(true);
  });
});
