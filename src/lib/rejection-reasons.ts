// Why a delivery was refused: one closed vocabulary, decided once from the error that answered it, so
// `/metrics`, the refusals page, the admin API and the CLI name one refusal alike. `/metrics` counts a
// reason under its class (the code the sender was answered with), the values its `reason` label has
// always had; the refusals page keeps the reason itself.
import { AppError, type ErrorCode } from './errors.ts';

/**
 * Every reason a refusal is recorded under, with its status: the error's code, or a finer reason
 * where the refusal says which (the verification's, the 503's `why.reason`). Closed, so the counts
 * stay a few rows per minute and sender whatever senders send.
 */
export const REJECTION_REASONS = {
  not_found: 404,
  payload_too_large: 413,
  unsupported_media_type: 415,
  headers_missing: 401,
  signature_malformed: 401,
  signature_mismatch: 401,
  timestamp_outside_tolerance: 401,
  unauthorized: 401,
  invalid_payload: 400,
  // One event of a batch, malformed or refused by its schema: set aside while its batch-mates are
  // stored, so the delivery is answered as they are (200; 202 in async mode, the record says which).
  invalid_event: 200,
  backlog_full: 503,
  deadline_passed: 503,
  database_unavailable: 503,
  sender_paused: 503,
  unavailable: 503,
} as const satisfies Record<string, number>;

export type RejectionReason = keyof typeof REJECTION_REASONS;
export const rejectionReasons = Object.keys(REJECTION_REASONS) as [RejectionReason, ...RejectionReason[]];

export const isRejectionReason = (value: unknown): value is RejectionReason =>
  typeof value === 'string' && Object.hasOwn(REJECTION_REASONS, value);

/** The codes that refuse a delivery; `processing_failed` stored it (failed), `invalid_request` is the admin API's. */
type RefusingCode = Exclude<ErrorCode, 'processing_failed' | 'invalid_request'>;

/**
 * A reason's class: the code its delivery was answered with, or `invalid_event`. The `reason` label
 * of `webhook_rejections_total`, whose values users' queries and alerts already name.
 */
export type RejectionClass = RefusingCode | 'invalid_event';

const CLASS_BY_STATUS: Readonly<Record<(typeof REJECTION_REASONS)[RejectionReason], RejectionClass>> = {
  404: 'not_found',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  401: 'unauthorized',
  400: 'invalid_payload',
  200: 'invalid_event',
  503: 'unavailable',
};

export const rejectionClass = (reason: RejectionReason): RejectionClass => CLASS_BY_STATUS[REJECTION_REASONS[reason]];

const REFUSING_CODES: ReadonlySet<ErrorCode> = new Set<RefusingCode>([
  'not_found',
  'payload_too_large',
  'unsupported_media_type',
  'unauthorized',
  'invalid_payload',
  'unavailable',
]);

/**
 * The reason `error` refused its delivery for, or undefined when it did not refuse it (a handler's
 * failure stored it as failed; `invalid_request` is the admin API's). Anything that is not an
 * AppError is a fault of ours that the app answers 503 (app.ts): refused all the same, as
 * `unavailable`. The finer reason the error names when it is a known one of its status, else its code.
 */
export function rejectionReasonOf(error: unknown): RejectionReason | undefined {
  const refusal = error instanceof AppError ? error : new AppError('unavailable');
  if (!REFUSING_CODES.has(refusal.code)) return undefined;
  const finer = refusal.why.reason;
  if (isRejectionReason(finer) && REJECTION_REASONS[finer] === refusal.status) return finer;
  return isRejectionReason(refusal.code) ? refusal.code : 'unavailable';
}
