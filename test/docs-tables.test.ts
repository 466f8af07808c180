// The documentation's tables render: no table is cut in two by a blank line (the rows after it would
// show as raw pipes), and the CLI's commands table in docs/operations.md has one row per command,
// covering every command the program registers.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../src/cli/program.ts';

const pages = [
  'README.md',
  ...readdirSync('docs')
    .filter((file) => file.endsWith('.md'))
    .map((file) => `docs/${file}`),
];

const isRow = (line: string) => line.trimStart().startsWith('|');
const isDelimiterRow = (line: string | undefined) => line !== undefined && /^\s*\|(\s*:?-{3,}:?\s*\|)+\s*$/.test(line);

describe('markdown tables', () => {
  it.each(pages)('%s: no table continues after a blank line', (page) => {
    const lines = readFileSync(page, 'utf8').split('\n');
    const split = lines.flatMap((line, index) =>
      // A row, a blank line, then a row that does not start a table of its own (no delimiter row under it).
      index >= 2 &&
      isRow(line) &&
      lines[index - 1]?.trim() === '' &&
      isRow(lines[index - 2] ?? '') &&
      !isDelimiterRow(lines[index + 1])
        ? [`line ${index + 1}: ${line.slice(0, 60)}`]
        : [],
    );
    expect(split).toEqual([]);
  });
});

describe("docs/operations.md's commands table", () => {
  const lines = readFileSync('docs/operations.md', 'utf8').split('\n');
  const start = lines.indexOf('## Commands');
  const firstRow = lines.findIndex((line, index) => index > start && isRow(line));
  const end = lines.findIndex((line, index) => index > firstRow && !isRow(line));
  // The rows after the header and its delimiter: their first cells.
  const firstCells = lines.slice(firstRow + 2, end).map((row) => row.split(' | ')[0]?.replace(/^\|\s*/, '') ?? '');

  it('names each command once', () => {
    expect(firstCells.length).toBeGreaterThan(10);
    expect(firstCells.filter((cell, index) => firstCells.indexOf(cell) !== index)).toEqual([]);
  });

  it('covers every command the CLI registers', () => {
    const program = buildProgram({ env: {}, out: () => {}, err: () => {} }, () => {});
    const names = program.commands.flatMap((group) =>
      group.commands.length === 0 ? [group.name()] : group.commands.map((verb) => `${group.name()} ${verb.name()}`),
    );
    const table = firstCells.join('\n');
    // `jobs replay\|retry\|send …` and `senders list … / senders pause …` name several verbs in one row.
    const missing = names.filter((name) => {
      const [group, verb] = name.split(' ');
      if (verb === undefined) return !table.includes(`\`${group}`);
      return !new RegExp(`\`${group} (\\S*\\\\\\|)?${verb}\\b|${group} [^\`]*\\b${verb}\\b`).test(table);
    });
    expect(missing).toEqual([]);
  });
});
