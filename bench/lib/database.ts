// A fresh, migrated database for one benchmark run: an embedded PostgreSQL in a new data folder, or,
// when BENCH_DATABASE_URL is set, a new `bench_<random>` database on that server, dropped afterwards.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';
import { migrateDatabase } from '../../src/db/migrate.ts';
import { startEmbeddedPostgres } from '../../src/entry/setup/embedded-postgres.ts';

export interface BenchDatabase {
  url: string;
  kind: 'embedded' | 'external';
  /** PostgreSQL's postmaster pid when it runs on this machine (embedded), for CPU accounting. */
  postmasterPid: number | undefined;
  /** Server log lines (embedded only), for diagnosing a failed run. */
  log: readonly string[];
  dispose(): Promise<void>;
}

function withDatabaseName(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

async function externalDatabase(serverUrl: string): Promise<BenchDatabase> {
  const name = `bench_${randomBytes(6).toString('hex')}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${name}"`);
  } catch (error) {
    await admin.end({ timeout: 5 });
    throw error;
  }
  const dispose = async () => {
    try {
      // FORCE ends sessions a crashed service may have left behind (PostgreSQL 13+).
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
    } finally {
      await admin.end({ timeout: 5 });
    }
  };
  const url = withDatabaseName(serverUrl, name);
  try {
    await migrateDatabase(url);
  } catch (error) {
    await dispose();
    throw error;
  }
  return { url, kind: 'external', postmasterPid: undefined, log: [], dispose };
}

async function embeddedDatabase(dataDir: string): Promise<BenchDatabase> {
  const log: string[] = [];
  const server = await startEmbeddedPostgres(dataDir, (line) => {
    log.push(line);
    if (log.length > 200) log.shift();
  });
  try {
    await migrateDatabase(server.url);
    const pidFile = readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8');
    const postmasterPid = Number(pidFile.split('\n', 1)[0]);
    return {
      url: server.url,
      kind: 'embedded',
      postmasterPid: Number.isInteger(postmasterPid) && postmasterPid > 0 ? postmasterPid : undefined,
      log,
      dispose: () => server.stop(),
    };
  } catch (error) {
    await server.stop();
    throw error;
  }
}

/** `dataDir` must be a fresh folder the caller removes afterwards; unused with BENCH_DATABASE_URL. */
export function freshDatabase(dataDir: string, serverUrl = process.env.BENCH_DATABASE_URL): Promise<BenchDatabase> {
  return serverUrl ? externalDatabase(serverUrl) : embeddedDatabase(dataDir);
}
