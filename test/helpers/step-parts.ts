// The parts a background step is given, as the Worker's cron gives them (a fresh run, no publishers
// unless the test names some): for tests that run one step, or the cron's runner, by hand.
import { parseConfig } from '../../src/config.ts';
import type { Database } from '../../src/db/client.ts';
import { expectedMigration } from '../../src/db/migrations.ts';
import { newHexId } from '../../src/lib/clock.ts';
import { createLogger } from '../../src/lib/logger.ts';
import type { StepParts } from '../../src/ops/maintenance/background.ts';

export function cronParts(db: Database, overrides: Partial<StepParts> = {}): StepParts {
  return {
    config: parseConfig({}),
    runtime: 'cron',
    db,
    clock: () => Date.now(),
    logger: createLogger({ level: 'silent', now: () => new Date(), write: () => {} }),
    newId: newHexId,
    random: Math.random,
    expectedMigration,
    publishers: [],
    ...overrides,
  };
}
