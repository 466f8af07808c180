// The production image, the systemd unit and docs/production.md stay true of the code: the image's
// Node is the pinned one and its command is what `npm start` runs, it runs as a non-root user, its
// health check asks a route the app answers, the build context lets in what it copies, the stop
// timeouts cover the drain the default settings allow, and every variable the guide names is one
// the code reads.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.ts';
import { expectedMigration } from '../src/db/migrations.ts';
import { healthRoutes } from '../src/ops/routes/health.ts';

const manifest = JSON.parse(readFileSync('package.json', 'utf8')) as {
  scripts: Record<string, string>;
  devDependencies: Record<string, string>;
};
const guide = readFileSync('docs/production.md', 'utf8');
const unit = readFileSync('ops/webhook-inbox.service', 'utf8');

/** The Dockerfile's instructions, continuation lines joined, comments dropped, split into stages. */
const stages = (() => {
  const instructions = readFileSync('Dockerfile', 'utf8')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const [keyword = '', ...rest] = line.split(/\s+/);
      return { keyword: keyword.toUpperCase(), args: rest.join(' ') };
    });
  const result: Array<typeof instructions> = [];
  for (const instruction of instructions) {
    if (instruction.keyword === 'FROM' || result.length === 0) result.push([]);
    result.at(-1)?.push(instruction);
  }
  return result;
})();
const preamble = stages[0]?.[0]?.keyword === 'ARG' ? (stages.shift() ?? []) : [];
const runtime = stages.at(-1) ?? [];
const args = (stage: typeof runtime, keyword: string) =>
  stage.filter((instruction) => instruction.keyword === keyword).map((instruction) => instruction.args);
const only = (stage: typeof runtime, keyword: string) => {
  const found = args(stage, keyword);
  expect(found, keyword).toHaveLength(1);
  return found[0] ?? '';
};
/** A unit setting's value (the last one wins, as in systemd). */
const unitSetting = (name: string) => [...unit.matchAll(new RegExp(`^${name}=(.*)$`, 'gm'))].at(-1)?.[1];

describe('the Dockerfile', () => {
  it('builds every stage on the Node the project pins (package.json devDependencies `node`)', () => {
    expect(preamble.map((instruction) => instruction.args)).toContain(`NODE_VERSION=${manifest.devDependencies.node}`);
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of stages) expect(stage[0]?.args).toMatch(/^node:\$\{NODE_VERSION\}-[a-z]+-slim(\s|$)/);
  });

  it('runs what `npm start` runs, as a numeric non-root user, stopped by SIGTERM', () => {
    expect((JSON.parse(only(runtime, 'CMD')) as string[]).join(' ')).toBe(manifest.scripts.start);
    const user = only(runtime, 'USER');
    expect(user).toMatch(/^\d+(:\d+)?$/);
    expect(Number(user.split(':')[0])).toBeGreaterThan(0);
    expect(only(runtime, 'STOPSIGNAL')).toBe('SIGTERM');
    expect(args(runtime, 'ENV').join(' ')).toContain('NODE_ENV=production');
    // No secret or token is baked into the image.
    expect(args(runtime, 'ENV').join(' ')).not.toMatch(/SECRET|TOKEN|PUBLIC_KEY|DATABASE_URL/);
  });

  it('installs production dependencies beside the built entries that bin/start.js and db:migrate load', () => {
    expect(args(runtime, 'RUN').join(' ')).toContain('npm ci --omit=dev');
    const copied = args(runtime, 'COPY').map((copy) => copy.split(/\s+/));
    const fromBuild = copied.filter((parts) => parts[0]?.startsWith('--from=')).map((parts) => parts[1]);
    expect(fromBuild).toContain('/app/dist');
    const sources = copied.filter((parts) => !parts[0]?.startsWith('--')).flatMap((parts) => parts.slice(0, -1));
    for (const needed of ['package.json', 'package-lock.json', 'patches', 'bin', 'drizzle']) {
      expect(sources).toContain(needed);
    }
    expect(readFileSync('bin/start.js', 'utf8')).toContain("runBuilt('entry/node.mjs')");
    // bin/build.js's ENTRIES: what `npm run build` writes.
    const built = [...readFileSync('bin/build.js', 'utf8').matchAll(/: '(dist\/[^']+)'/g)].map(
      (match) => match[1] ?? '',
    );
    expect(built).toContain('dist/entry/node.mjs');
    expect(built).toContain('dist/entry/migrate.mjs');
    expect(manifest.scripts['db:migrate']).toBe('node dist/entry/migrate.mjs');
    // The suite's global setup ran `npm run build`: the entries are there to be copied.
    for (const file of built) expect(existsSync(file), file).toBe(true);
  });

  it('checks health on a route the app answers 200, with Node (no curl in the slim image)', async () => {
    const check = only(runtime, 'HEALTHCHECK');
    expect(check).toMatch(/CMD \["node", "-e", /);
    const path = check.match(/127\.0\.0\.1:\$\{process\.env\.PORT\}(\/[a-z]+)/)?.[1];
    expect(path).toBe('/healthz');
    const answer = await healthRoutes({ expectedMigration }).request(path ?? '');
    expect(answer.status).toBe(200);
  });

  it('lets into the build context every path it copies, and nothing else', () => {
    const lines = readFileSync('.dockerignore', 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '' && !line.startsWith('#'));
    expect(lines[0]).toBe('*');
    const allowed = lines.slice(1).map((line) => line.replace(/^!/, '').replace(/\/$/, ''));
    const copiedFromContext = stages
      .flatMap((stage) => args(stage, 'COPY'))
      .map((copy) => copy.split(/\s+/))
      .filter((parts) => !parts[0]?.startsWith('--'))
      .flatMap((parts) => parts.slice(0, -1));
    expect(new Set(copiedFromContext)).toEqual(new Set(allowed));
  });
});

describe('the systemd unit', () => {
  it('runs what `npm start` runs from the release folder, in production, with its environment from a file', () => {
    expect(unitSetting('ExecStart')).toMatch(new RegExp(`^/\\S*/${manifest.scripts.start}$`));
    expect(unitSetting('WorkingDirectory')).toBeDefined();
    expect(unitSetting('Environment')).toBe('NODE_ENV=production');
    expect(unitSetting('EnvironmentFile')).toMatch(/^\//);
    expect(unitSetting('Restart')).toBe('on-failure');
    expect(unitSetting('ExecStartPre')).toBeUndefined();
  });

  it('is hardened', () => {
    for (const [name, value] of [
      ['NoNewPrivileges', 'yes'],
      ['ProtectSystem', 'strict'],
      ['ProtectHome', 'yes'],
      ['PrivateTmp', 'yes'],
      ['DynamicUser', 'yes'],
      ['CapabilityBoundingSet', ''],
    ] as const) {
      expect(unitSetting(name), name).toBe(value);
    }
    // V8's compilers execute memory they wrote: Node cannot run under it.
    expect(unitSetting('MemoryDenyWriteExecute')).toBeUndefined();
  });
});

describe('the stop timeout', () => {
  // What the drain may take at the default settings (src/entry/node.ts's shutdown): the last request
  // arrives within HTTP_REQUEST_TIMEOUT_MS and is answered within HANDLER_DEADLINE_MS while a publish
  // in flight ends within OUTBOX_TIMEOUT_MS; then two writes within the statement timeout
  // (HANDLER_DEADLINE_MS), the last spans' export (OpenTelemetry's default OTEL_BSP_EXPORT_TIMEOUT,
  // 30 s) and the pools' close (postgres.js `end({ timeout })`, in seconds).
  const defaults = parseConfig({});
  const poolCloseSeconds = Number(/end\(\{ timeout: (\d+) \}\)/.exec(readFileSync('src/db/client.ts', 'utf8'))?.[1]);
  const budgetMs =
    Math.max(defaults.HTTP_REQUEST_TIMEOUT_MS + defaults.HANDLER_DEADLINE_MS, defaults.OUTBOX_TIMEOUT_MS) +
    2 * defaults.HANDLER_DEADLINE_MS +
    30_000 +
    poolCloseSeconds * 1000;
  const stopSeconds = Number(unitSetting('TimeoutStopSec'));

  it("covers the drain's budget with a margin of at most 15 s, and the guide states both", () => {
    expect(poolCloseSeconds).toBeGreaterThan(0);
    // The first term is enforced by the service itself, which closes stalled uploads then (shutdown-drain.test.ts).
    expect(readFileSync('src/entry/node.ts', 'utf8')).toContain(
      'config.HTTP_REQUEST_TIMEOUT_MS + config.HANDLER_DEADLINE_MS',
    );
    expect(stopSeconds * 1000).toBeGreaterThanOrEqual(budgetMs);
    expect(stopSeconds * 1000 - budgetMs).toBeLessThanOrEqual(15_000);
    expect(guide).toContain(`**${budgetMs / 1000} s**`);
    expect(guide).toContain(`--stop-timeout ${stopSeconds} `);
    expect(guide).toContain(`stop_grace_period: ${stopSeconds}s`);
    expect(guide).toContain(`terminationGracePeriodSeconds: ${stopSeconds}`);
    expect(guide).toContain(`TimeoutStopSec=${stopSeconds}`);
  });
});

describe('docs/production.md', () => {
  const sourceText = [
    ...readdirSync('src', { recursive: true, encoding: 'utf8' })
      .filter((file) => /\.tsx?$/.test(file))
      .map((file) => join('src', file)),
    'bin/start.js',
  ]
    .map((file) => readFileSync(file, 'utf8'))
    .join('\n');

  it('names only variables the code reads', () => {
    // Upper-case names with an underscore, but the socket families a unit setting lists (AF_INET).
    const named = new Set(guide.match(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g)?.filter((name) => !name.startsWith('AF_')));
    expect(named.size).toBeGreaterThan(5);
    const unknown = [...named].filter((name) => !new RegExp(`\\b${name}\\b`).test(sourceText));
    expect(unknown).toEqual([]);
  });

  it('quotes the routes, the refusal and the unit as they are', () => {
    expect(guide).toContain(`\`${manifest.scripts.start}\``);
    expect(guide).toContain(`node:${manifest.devDependencies.node}-`);
    expect(sourceText).toContain('the database has pending migrations: run `npm run db:migrate` first');
    expect(guide).toContain('the database has pending migrations: run `npm run db:migrate` first');
    expect(guide).toContain('{"status":"unavailable","reason":"database unreachable"}');
    expect(guide).toContain(`ExecStart=${unitSetting('ExecStart')}`);
    expect(readFileSync('docs/README.md', 'utf8')).toContain('(production.md)');
  });
});
