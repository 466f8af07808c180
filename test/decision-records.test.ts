// The decision records in docs/decisions/ keep their form: a title, a status and a date under it,
// the four sections, a link from docs/development.md's list; and every figure one of them quotes
// names where it came from (the command that measured it, or the issue that reported it), so a
// reader can measure it again instead of trusting a number from another day.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const records = readdirSync('docs/decisions')
  .filter((file) => /^\d{4}-.+\.md$/.test(file))
  .sort();

/** Paragraphs, list items, headings and table rows: the pieces a figure and its source must share. */
function textUnits(markdown: string): string[] {
  const units: string[] = [];
  let current: string[] = [];
  for (const line of markdown.split('\n')) {
    const startsUnit = line.trim() === '' || /^\s*([-*]|\d+\.)\s/.test(line) || /^(#|\|)/.test(line);
    if (startsUnit && current.length > 0) {
      units.push(current.join('\n'));
      current = [];
    }
    if (line.trim() !== '') current.push(line);
  }
  if (current.length > 0) units.push(current.join('\n'));
  return units;
}

// A measured quantity: a number with a unit of time, size, rate or ratio. Not a release line (3.x,
// 0.301.x), not HTTP statuses in the plural (503s).
const FIGURE =
  /(?<![\w.`])\d[\d,.]*(?:[–-]\d[\d,.]*)?\s?(?:ms|µs|s|%|MB|MiB|KiB|kB|GB|bytes|×|x|events\/s|messages\/s|\/s)(?![\w.]?\w)/g;
const NOT_QUANTITIES = /\b[1-5]\d\ds\b|\b\d+(?:\.\d+)*\.x\b/g;
// What is not a measurement: code and literals, and a setting's value quoted beside its name.
const NOT_MEASURED = [/`[^`]*`\s*\([^)]*\)/g, /\(`[A-Z][A-Z0-9_]+`[^)]*\)/g, /`[^`]*`/g];
/** Words that say a figure was measured, not set: a setting's value needs no command. */
const MEASURED =
  /\b(?:measured|measures|took|median|p50|p99|CPU|faster|slower|rose|fell|gained|lost|gzipped|events\/s|messages\/s|deliveries\/s|per second|a second)\b|×|\d(?:\.\d+)?x\b|µs/;
/** A command in code quotes, or an issue whose finding the figure repeats. */
const SOURCE =
  /`(?:npm (?:run|test|ci|start)|npx |node |wrk |du |tsx |\.ci\/run|bash |sh |git |docker )[^`]*`|\b[Ii]ssue \d+\b/;

function unsourcedFigures(markdown: string): string[] {
  return textUnits(markdown).flatMap((unit) => {
    let text = unit.replace(NOT_QUANTITIES, '');
    for (const pattern of NOT_MEASURED) text = text.replace(pattern, '');
    const figures = text.match(FIGURE);
    return figures && MEASURED.test(text) && !SOURCE.test(unit)
      ? [`${figures.join(', ')}: ${unit.split('\n')[0]?.slice(0, 80)}`]
      : [];
  });
}

describe('decision records', () => {
  it('are numbered without gaps and each is listed in docs/development.md', () => {
    expect(records.map((file) => Number(file.slice(0, 4)))).toEqual(records.map((_, index) => index + 1));
    const list = readFileSync('docs/development.md', 'utf8');
    expect(records.filter((file) => !list.includes(`(decisions/${file})`))).toEqual([]);
  });

  it.each(records)('%s has a title, a status and a date, and the four sections', (file) => {
    const lines = readFileSync(`docs/decisions/${file}`, 'utf8').split('\n');
    expect(lines[0]).toMatch(new RegExp(`^# ${file.slice(0, 4)}: \\S`));
    expect(lines[2]).toMatch(
      /^Status: (accepted|superseded by \[\d{4}\]\(\d{4}-[^)]+\.md\))(; .+)?\. Date: \d{4}-\d{2}-\d{2}\.$/,
    );
    const sections = lines.filter((line) => line.startsWith('## ')).map((line) => line.slice(3));
    expect(sections).toEqual(['Context', 'Decision', 'Consequences', 'When to revisit']);
  });

  it.each(records)('%s: every figure names the command or the issue it came from', (file) => {
    expect(unsourcedFigures(readFileSync(`docs/decisions/${file}`, 'utf8'))).toEqual([]);
  });

  it('tells a sourced figure from an unsourced one', () => {
    expect(unsourcedFigures('- The start-up took 0.4 s.')).toHaveLength(1);
    expect(unsourcedFigures('- The start-up took 0.4 s (`npm run bench:startup`).')).toEqual([]);
    expect(unsourcedFigures('Issue 34 found 12.5 MB of log in 30 s.')).toEqual([]);
    expect(unsourcedFigures('- every `DELIVERY_LOG_FLUSH_MS` (250 ms), on the 3.x line; only 200s and 503s')).toEqual(
      [],
    );
    expect(unsourcedFigures('| 1.08× | 241,529 bytes |')).toHaveLength(1);
    expect(unsourcedFigures('- A lane waits `STALLED_LANE_MS`, at most 100 ms more than it would.')).toEqual([]);
  });
});
