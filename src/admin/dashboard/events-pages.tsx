// The events pages: the list (/admin/events: counts per status, filters, id search, cursor paging)
// and one event (its fields, stored payload, the outbox messages it produced, its deliveries, Replay). Pure
// rendering: the routes read the rows (dashboard/routes.tsx).
import type { FC } from 'hono/jsx';
import { webhookEventStatuses } from '../../db/schema.ts';
import { DELIVERY_LOG_CAP, type LoggedDelivery } from '../../inbox/delivery-log.ts';
import { REPLAYABLE_STATUSES } from '../../ops/jobs/job-kinds.ts';
import type { CountsByStatus } from '../../ops/reads/counts.ts';
import type { Page } from '../../ops/reads/cursor.ts';
import type { EventDetail, EventListing } from '../../ops/reads/events.ts';
import type { OutboxListing } from '../../ops/reads/outbox-view.ts';
import { eventUrl } from '../event-urls.ts';
import { ActionForm, Field, ItemPage } from './item-page.tsx';
import { BulkControl } from './jobs-page.tsx';
import { type DashboardList, ListPage, type ListPageFilter, Select } from './list-page.tsx';
import { DeliveryTable, EventTable, iso, OutboxTable } from './rows.tsx';

/** The events list, which an event's page leads back to. */
const EVENTS_LIST: DashboardList = {
  path: '/admin/events',
  title: 'Events',
  noun: 'Event',
  when: 'Received',
  statuses: webhookEventStatuses,
  itemAttribute: 'data-event',
};

export interface EventsPageFilter extends ListPageFilter {
  provider?: string | undefined;
  type?: string | undefined;
  subject?: string | undefined;
}

export const EventsPage: FC<{
  filter: EventsPageFilter;
  senderNames: readonly string[];
  counts: CountsByStatus;
  page: Page<EventListing>;
}> = ({ filter, senderNames, counts, page }) => {
  const fields = (
    <>
      <Select name="provider" label="Provider" options={senderNames} value={filter.provider} />
      <label>
        Type
        <input name="type" value={filter.type ?? ''} placeholder="subscription.updated" />
      </label>
      <label>
        About
        <input name="subject" value={filter.subject ?? ''} placeholder="sub_… or owner/repo" />
      </label>
    </>
  );
  const replayable = REPLAYABLE_STATUSES.find((status) => status === filter.status);
  return (
    <ListPage of={EVENTS_LIST} counts={counts} filter={filter} fields={fields} next={page.nextCursor}>
      {replayable === undefined ? null : (
        <BulkControl
          kind="replay_events"
          filter={filter}
          count={counts.byStatus[replayable] ?? 0}
          atLeast={counts.atLeast.includes(replayable)}
        />
      )}
      <EventTable events={page.rows} empty="No event matches." />
    </ListPage>
  );
};

const REPLAYABLE_NOTE = 'Replay applies failed, parked and dead-lettered events again; others are only recorded.';

export const EventPage: FC<{ event: EventDetail; messages: OutboxListing[]; deliveries: LoggedDelivery[] }> = ({
  event,
  messages,
  deliveries,
}) => {
  const target = `${event.provider}/${event.eventId}`;
  const action = (
    <>
      <ActionForm action={eventUrl('api', event, '/replay')} target={target} kind="replay" label="Replay" />
      <span class="note">{REPLAYABLE_NOTE}</span>
    </>
  );
  return (
    <>
      <ItemPage
        of={EVENTS_LIST}
        context={event.provider}
        id={event.eventId}
        target={target}
        item={event}
        action={action}
      >
        <Field name="provider">{event.provider}</Field>
        <Field name="type">{event.eventType}</Field>
        <Field name="failed attempts">{String(event.attempts)}</Field>
        <Field name={event.status === 'parked' ? 'parked because' : 'last error'}>
          <span class={event.lastError === null ? 'empty' : 'error'} id="last-error">
            {event.lastError ?? 'none'}
          </span>
        </Field>
        <Field name="received (UTC)">{iso(event.receivedAt)}</Field>
        <Field name="occurred (UTC)">{iso(event.occurredAt)}</Field>
        <Field name="completed (UTC)">{iso(event.completedAt)}</Field>
        <Field name="due (UTC)">{iso(event.availableAt)}</Field>
        {event.lockedUntil === null ? null : <Field name="leased until (UTC)">{iso(event.lockedUntil)}</Field>}
      </ItemPage>
      <h2>Outbox messages it produced</h2>
      <OutboxTable messages={messages} empty="None." />
      <h2 id="deliveries">Deliveries</h2>
      <p class="note">
        Each delivery that passed its checks, newest first; the newest {String(DELIVERY_LOG_CAP)} are kept.
      </p>
      <DeliveryTable deliveries={deliveries} empty="None recorded." />
    </>
  );
};
