// Removes the databases the workers project made (test/worker-pool.ts). Listed after
// test/global-setup.ts, so its teardown runs first, while the server and the template still exist.
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { workerDatabasePrefix } from './worker-pool.ts';

export default function setup(project: TestProject): () => Promise<void> {
  return async () => {
    const { adminDatabaseUrl, templateDatabase } = project.getProvidedContext();
    const admin = postgres(adminDatabaseUrl, { max: 1, onnotice: () => {} });
    try {
      const made = await admin<{ datname: string }[]>`select datname from pg_database
        where starts_with(datname, ${workerDatabasePrefix(templateDatabase)})`;
      for (const { datname } of made) await admin.unsafe(`drop database if exists ${datname} with (force)`);
    } finally {
      await admin.end();
    }
  };
}
