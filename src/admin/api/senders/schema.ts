// The admin API's senders' inputs and answers (senders/route.ts): pause and resume, and the list of
// enabled senders with their pauses. The operator rule is the shared one (../schemas.ts).
import { z } from '@hono/zod-openapi';
import { PAUSE_MAX_MINUTES, PAUSE_NOTE_MAX, pauseNoteProblem } from '../../../ops/pauses/sender-pauses.ts';
import { operatorBody, pathParam } from '../schemas.ts';

export const senderParams = z.object({ provider: pathParam('provider', 64) });

/** A pause's note (a sender's or a destination's): one line, why, for the other operators. */
export const pauseNote = z
  .string()
  .max(PAUSE_NOTE_MAX)
  .refine((note) => pauseNoteProblem(note) === undefined, { message: 'not a note' })
  .optional()
  .openapi({ description: 'why, for the other operators (one line, no control characters)' });

/** Strict: a misspelt `minute` would otherwise pause the sender until someone resumes it. */
export const pauseBody = z
  .object({
    operator: operatorBody.shape.operator,
    minutes: z
      .number()
      .int()
      .min(1)
      .max(PAUSE_MAX_MINUTES)
      .optional()
      .openapi({ description: `pause for this many minutes (at most ${PAUSE_MAX_MINUTES}: a week)` }),
    until: z.iso
      .datetime({ offset: true })
      .optional()
      .openapi({ description: 'pause until this time (ISO 8601 with its offset; in the future, within a week)' }),
    note: pauseNote,
  })
  .strict()
  .refine((body) => body.minutes === undefined || body.until === undefined, {
    path: ['until'],
    message: 'minutes or until, not both',
  })
  .openapi('PauseRequest', {
    description: 'Neither minutes nor until: paused until an operator resumes the sender.',
  });

const timestamp = z.string().openapi({ format: 'date-time' });

const pauseSchema = z
  .object({
    paused_at: timestamp,
    paused_by: z.string(),
    until: timestamp.nullable().openapi({ description: 'when the pause ends by itself; null: when resumed' }),
    note: z.string().nullable(),
  })
  .openapi('SenderPause');

export const senderSchema = z
  .object({
    provider: z.string(),
    status: z.enum(['active', 'paused']),
    pause: pauseSchema.nullable(),
  })
  .openapi('Sender');

export const sendersAnswer = z.object({ senders: senderSchema.array() });

export const pauseAnswer = z.object({
  before: z.enum(['active', 'paused']).openapi({ description: 'paused: the pause was replaced by this one' }),
  sender: senderSchema,
  warnings: z.string().array().openapi({
    description:
      "what the pause may cost: a sender that never retries by itself (GitHub, GitLab), a pause longer than the sender's retries",
  }),
});

export const resumeAnswer = z.object({
  resumed: z.boolean().openapi({ description: 'false when the sender was not paused (nothing changed)' }),
  sender: senderSchema,
});
