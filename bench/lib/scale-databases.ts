// bench:scale's two databases on one server: an empty one and a filled one, both migrated by the
// project's migrator. The server is BENCH_DATABASE_URL's, else an embedded PostgreSQL in a
// throw-away folder. The filled database is named by its size (`bench_scale_<events>`) and marked,
// once its fill has finished, by a comment on the database (no table of our own), so a later run
// with BENCH_SCALE_REUSE=1 can take it as it is instead of filling again.
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { migrateDatabase } from '../../src/db/migrate.ts';
import { startEmbeddedPostgres } from '../../src/entry/setup/embedded-postgres.ts';

const MARKER = 'webhook-inbox bench:scale fill';

export interface FillMarker {
  events: number;
  messages: number;
  filledAt: string;
  fillSeconds: number;
}

export interface ScaleServer {
  kind: 'embedded' | 'external';
  /** The URL of a database on the server, with `name`. */
  urlOf(name: string): string;
  /** Creates `name` (dropping what had that name) and migrates it. */
  create(name: string): Promise<string>;
  /** Applies pending migrations to `name` (a reused database) and returns its URL. */
  migrate(name: string): Promise<string>;
  drop(name: string): Promise<void>;
  /** The completed fill recorded on `name`, if the database exists and its fill finished. */
  fillOf(name: string): Promise<FillMarker | undefined>;
  markFilled(name: string, marker: FillMarker): Promise<void>;
  stop(): Promise<void>;
}

function withDatabaseName(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

/** Names we make ourselves; checked anyway, since they go into SQL as identifiers. */
function identifier(name: string): string {
  if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`not a database name of ours: ${name}`);
  return `"${name}"`;
}

export async function scaleServer(dataDir: string, serverUrl = process.env.BENCH_DATABASE_URL): Promise<ScaleServer> {
  const embedded = serverUrl ? undefined : await startEmbeddedPostgres(dataDir, () => {});
  const url = serverUrl ?? (embedded as { url: string }).url;
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  const drop = async (name: string) => {
    // FORCE ends sessions a crashed service may have left behind (PostgreSQL 13+).
    await admin.unsafe(`drop database if exists ${identifier(name)} with (force)`);
  };
  return {
    kind: embedded ? 'embedded' : 'external',
    urlOf: (name) => withDatabaseName(url, name),
    async create(name) {
      await drop(name);
      await admin.unsafe(`create database ${identifier(name)}`);
      const created = withDatabaseName(url, name);
      await migrateDatabase(created);
      return created;
    },
    async migrate(name) {
      const existing = withDatabaseName(url, name);
      await migrateDatabase(existing);
      return existing;
    },
    drop,
    async fillOf(name) {
      const [row] = await admin<{ comment: string | null }[]>`
        select shobj_description(oid, 'pg_database') as comment from pg_database where datname = ${name}`;
      if (row?.comment?.startsWith(`${MARKER} `) !== true) return undefined;
      return JSON.parse(row.comment.slice(MARKER.length + 1)) as FillMarker;
    },
    async markFilled(name, marker) {
      const text = `${MARKER} ${JSON.stringify(marker)}`.replaceAll("'", "''");
      await admin.unsafe(`comment on database ${identifier(name)} is '${text}'`);
    },
    async stop() {
      await admin.end({ timeout: 5 });
      await embedded?.stop();
    },
  };
}

/** A name for a throw-away database. */
export function throwAwayName(prefix: string): string {
  return `${prefix}_${randomBytes(5).toString('hex')}`;
}
