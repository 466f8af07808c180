// Handler maps for failure cases: the real acme handler runs (its writes and its outbox message
// included), then the handler throws, so the test sees what the rollback takes back.
import { z } from 'zod';
import { defaultHandlers, defineHandler, type HandlerMap } from '../../src/domain/handlers.ts';
import { DomainRejection } from '../../src/lib/errors.ts';

export function failingAfterDefault(eventType: string, reason: string): HandlerMap {
  const real = defaultHandlers.acme?.[eventType];
  if (real === undefined) throw new Error(`no default acme handler for ${eventType}`);
  const failing = defineHandler({
    schema: z.unknown(),
    async apply(context, payload) {
      await real.apply(context, payload);
      throw new DomainRejection(reason);
    },
  });
  return { acme: { [eventType]: failing } };
}
