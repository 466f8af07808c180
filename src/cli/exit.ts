// The CLI's exit codes (the contract's), apart from the command context so that the program can
// answer `--help` and usage errors without loading what commands need.
/** replayFailed: a replay took an event through the domain path and it failed or parked again. */
export const EXIT = { done: 0, couldNotRun: 1, usage: 2, notFound: 3, replayFailed: 4 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];
