// The suite runs on a Node line that gets security fixes (22, 24, 26 and later even lines, as
// package.json's engines says), and on the one asked for when `npm run test:node -- <line>` ran it.
// Needs a process: npm scripts are asked which Node runs them.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const major = (version: string) => Number(version.replace(/^v/, '').split('.')[0]);

describe('the Node line', () => {
  it('is a supported one, and the one test:node asked for', () => {
    const line = major(process.versions.node);
    expect(line === 22 || line === 24 || (line >= 26 && line % 2 === 0)).toBe(true);
    const asked = process.env.EXPECTED_NODE_LINE;
    if (asked !== undefined) expect(line).toBe(major(asked));
  });

  it('is the one npm scripts run on, so the children the tests start run on it too', () => {
    const scripts = execFileSync('npm', ['exec', '--', 'node', '--version'], { encoding: 'utf8' });
    expect(major(scripts.trim())).toBe(major(process.versions.node));
  });
});
