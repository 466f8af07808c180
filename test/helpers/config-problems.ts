// What a configuration check refuses, as ConfigError's problems (one line per variable), or [] when it
// accepts: the one way the tests read a refusal of parseConfig or of a check on its result.
import { ConfigError } from '../../src/config.ts';

export function configProblems(check: () => unknown): readonly string[] {
  try {
    check();
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
}
