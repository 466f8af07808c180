// `webhook-inbox migrate`: applies pending migrations (drizzle/) to DATABASE_URL with Drizzle's
// migrator, exactly as `npm run db:migrate` does; `--online` builds their indexes concurrently
// first (docs/scaling.md). Safe to repeat: applied migrations are skipped.
import { migrateDatabase, migrationReport } from '../../db/migrate.ts';
import { CliError, type CommandModule, EXIT } from '../context.ts';

export const migrateCommand: CommandModule = {
  path: ['migrate'],
  define: (command, run) =>
    command
      .description('apply pending database migrations (same as npm run db:migrate)')
      .option(
        '--online',
        'build new indexes with CREATE INDEX CONCURRENTLY first, so a large database keeps taking writes (slower)',
      )
      .option('--json', 'print the result as one JSON document')
      .action(
        run(
          async (context, options: { json?: boolean; online?: boolean }) => {
            let applied: string[];
            try {
              const log = options.json ? undefined : context.out;
              applied = await migrateDatabase(context.databaseUrl, { online: options.online === true, log });
            } catch (error) {
              // The migrator's message names the statement, never the connection string.
              throw new CliError(
                EXIT.couldNotRun,
                `migration failed: ${error instanceof Error ? error.message : String(error)}`,
              );
            }
            context.out(options.json ? JSON.stringify({ migrated: true, applied }) : migrationReport(applied));
            return EXIT.done;
          },
          { requireMigrated: false },
        ),
      ),
};
