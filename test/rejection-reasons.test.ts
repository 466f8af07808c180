// One vocabulary for a refusal (issue 36 item 5): the reason the refusals page records and the class
// `/metrics` counts it under come from one decision, and a class is the code of the answer it got.
import { describe, expect, it } from 'vitest';
import { AppError } from '../src/lib/errors.ts';
import {
  REJECTION_REASONS,
  rejectionClass,
  rejectionReasonOf,
  rejectionReasons,
} from '../src/lib/rejection-reasons.ts';

describe('rejection reasons', () => {
  it('counts every reason under a class answered with the same status', () => {
    for (const reason of rejectionReasons) {
      const klass = rejectionClass(reason);
      if (klass === 'invalid_event') expect(reason).toBe('invalid_event');
      else expect(new AppError(klass).status).toBe(REJECTION_REASONS[reason]);
    }
  });

  it('takes the finer reason an error names, its code otherwise, and nothing from a failure that stored it', () => {
    expect(rejectionReasonOf(new AppError('unauthorized', { why: { reason: 'signature_mismatch' } }))).toBe(
      'signature_mismatch',
    );
    expect(rejectionReasonOf(new AppError('unavailable', { why: { reason: 'signature_mismatch' } }))).toBe(
      'unavailable',
    );
    expect(rejectionReasonOf(new AppError('unavailable', { why: { reason: 'sender_paused' } }))).toBe('sender_paused');
    expect(rejectionReasonOf(new Error('a fault of ours'))).toBe('unavailable');
    expect(rejectionReasonOf(new AppError('processing_failed'))).toBeUndefined();
    expect(rejectionReasonOf(new AppError('invalid_request'))).toBeUndefined();
  });
});
