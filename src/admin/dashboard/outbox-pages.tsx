// The outbox pages: the list (/admin/outbox: counts per status, filters, id search, cursor paging)
// and one message (its fields, the event it came from, its payload, Retry when dead). Pure
// rendering: the routes read the rows (dashboard/routes.tsx).
import type { FC } from 'hono/jsx';
import { outboxStatuses } from '../../db/schema.ts';
import type { CountsByStatus } from '../../ops/reads/counts.ts';
import type { Page } from '../../ops/reads/cursor.ts';
import { baseKeyOf, type OutboxDetail, type OutboxListing } from '../../ops/reads/outbox-view.ts';
import { DestinationOutcomes } from './destinations-page.tsx';
import { ActionForm, Field, ItemPage } from './item-page.tsx';
import { BulkControl } from './jobs-page.tsx';
import { type DashboardList, ListPage, type ListPageFilter } from './list-page.tsx';
import { eventPath, iso, OutboxTable } from './rows.tsx';

/** The outbox list, which a message's page leads back to. */
const OUTBOX_LIST: DashboardList = {
  path: '/admin/outbox',
  title: 'Outbox',
  noun: 'Message',
  when: 'Created',
  statuses: outboxStatuses,
  itemAttribute: 'data-message',
};

export interface OutboxPageFilter extends ListPageFilter {
  topic?: string | undefined;
  destination?: string | undefined;
}

export const OutboxPage: FC<{
  filter: OutboxPageFilter;
  counts: CountsByStatus;
  page: Page<OutboxListing>;
  /** The configured destinations: the only values the filter offers. */
  destinationNames: readonly string[];
  /** Why the pending messages of destinations not publishing wait (destinationWaits). */
  waits: ReadonlyMap<string, string>;
}> = ({ filter, counts, page, destinationNames, waits }) => {
  const fields = (
    <>
      <label>
        Topic
        <input name="topic" value={filter.topic ?? ''} />
      </label>
      <label>
        Destination
        <select name="destination">
          <option value="">any</option>
          {destinationNames.map((name) => (
            <option value={name} selected={filter.destination === name}>
              {name}
            </option>
          ))}
        </select>
      </label>
    </>
  );
  return (
    <ListPage of={OUTBOX_LIST} counts={counts} filter={filter} fields={fields} next={page.nextCursor}>
      {filter.status === 'dead' ? (
        <BulkControl
          kind="retry_outbox"
          filter={filter}
          count={counts.byStatus.dead ?? 0}
          atLeast={counts.atLeast.includes('dead')}
        />
      ) : null}
      <OutboxTable messages={page.rows} empty="No message matches." waits={waits} />
    </ListPage>
  );
};

export const MessagePage: FC<{
  message: OutboxDetail;
  siblings: readonly OutboxListing[];
  /** Why it waits while pending at a destination that is not publishing (waitingOf); else null. */
  waiting: string | null;
}> = ({ message, siblings, waiting }) => {
  // The base key is provider:event_id:topic; sender names hold no colon, event ids may.
  const source = baseKeyOf(message).slice(0, -(message.topic.length + 1));
  const colon = source.indexOf(':');
  const provider = colon > 0 ? source.slice(0, colon) : undefined;
  const eventId = colon > 0 ? source.slice(colon + 1) : '';
  const action = (
    <>
      {message.status === 'dead' ? (
        <ActionForm action={`/admin/api/outbox/${message.id}/retry`} target={message.id} kind="retry" label="Retry" />
      ) : null}
      <span class="note">Retry sends a dead message back to pending (attempts 0, due now).</span>
    </>
  );
  return (
    <ItemPage
      of={OUTBOX_LIST}
      context={message.topic}
      id={message.id}
      target={message.id}
      item={message}
      action={action}
      after={
        <>
          <h2>Destinations</h2>
          <p class="note">This message's row for each destination it goes to, each with its own outcome.</p>
          <DestinationOutcomes rows={siblings} current={message.id} />
        </>
      }
    >
      <Field name="topic">{message.topic}</Field>
      <Field name="destination">{message.destination}</Field>
      <Field name="from event">
        {provider === undefined || eventId === '' ? (
          message.deduplicationKey
        ) : (
          <a href={eventPath(provider, eventId)}>{`${provider}/${eventId}`}</a>
        )}
      </Field>
      <Field name="failed attempts">{String(message.attempts)}</Field>
      <Field name="last error">
        <span class={message.lastError === null ? 'empty' : 'error'}>{message.lastError ?? 'none'}</span>
      </Field>
      {waiting === null ? null : (
        <Field name="waiting">
          <span class="error">{waiting}</span>
        </Field>
      )}
      <Field name="created (UTC)">{iso(message.createdAt)}</Field>
      <Field name="due (UTC)">{iso(message.availableAt)}</Field>
      <Field name="published (UTC)">{iso(message.publishedAt)}</Field>
    </ItemPage>
  );
};
