// The operator name every operator action records in `operator_actions`: one rule for the admin
// API, the dashboard (which posts to the API), the CLI and the names ADMIN_TOKENS gives its tokens
// (config.ts), checked before anything is read or changed. A name the database cannot store would
// otherwise fail the audit insert after the fact.
import { AppError } from './errors.ts';
import { isStorableText } from './text.ts';

/** Characters (UTF-16 code units) a name may have once trimmed. */
export const OPERATOR_NAME_MAX = 200;

/**
 * Why `name` (already trimmed) is not an operator name, or undefined when it is one: empty, longer
 * than OPERATOR_NAME_MAX, or holding a control character (NUL, which the database cannot store;
 * newlines and escape sequences, which would forge lines wherever the audit is printed) or a lone
 * surrogate (stored as U+FFFD: a different name).
 */
export function operatorNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'must name someone';
  if (name.length > OPERATOR_NAME_MAX) return `at most ${OPERATOR_NAME_MAX} characters`;
  if (/\p{Cc}/u.test(name) || !isStorableText(name)) return 'control characters and malformed text are refused';
  return undefined;
}

/** The guard of the operator actions themselves: whatever surface called them, a bad name changes nothing. */
export function assertOperatorName(name: string): void {
  if (operatorNameProblem(name) !== undefined) throw new AppError('invalid_request', { field: 'operator' });
}
