// bench:scale's stored month: N webhook events over the last 30 days and about one outbox message
// per ten, written with SQL (`insert … select … from generate_series`) one day per statement, so no
// transaction grows to gigabytes and the tables' own triggers and indexes do their ordinary work on
// every row. The mix is what a real inbox holds: mostly Stripe, GitHub, Shopify, acme and Standard
// Webhooks with their common event types, ~97% completed, some ignored, a few failed, parked, dead
// and (in the last day) received; payloads of a realistic size carrying the ids the senders put
// there (Stripe `data.object.id`, GitHub `repository.full_name`, Shopify's order `id`, acme
// `data.id`), already null past 7 days as retention leaves them. Columns the fill does not name
// take their defaults, so a column the application fills itself needs a line here.
import type postgres from 'postgres';

const DAY_MS = 86_400_000;
export const FILL_DAYS = 30;
/** PAYLOAD_RETENTION_DAYS' default: older finished rows hold no payload. */
const PAYLOAD_DAYS = 7;

/** Rows of day `day` (0: the oldest) when `events` are spread over FILL_DAYS days. */
function rowsOfDay(events: number, day: number): number {
  const base = Math.floor(events / FILL_DAYS);
  return base + (day < events % FILL_DAYS ? 1 : 0);
}

/**
 * One day's events. `$1` start, `$2` rows, `$3` the day's seconds, `$4` a per-day seed (ids unique
 * across days and fills), `$5` the payload cut-off, `$6` whether this is the last day (its only
 * `received` rows), `$7` how many distinct objects a sender's events are about.
 */
const EVENTS_OF_DAY = `
insert into webhook_events (provider, event_id, event_type, status, payload, received_at, occurred_at,
  completed_at, attempt_count, last_error, content_digest, available_at)
select provider, event_id, event_type, status,
  case when status in ('completed', 'ignored', 'dead_letter') and received_at < $5::timestamptz then null
    else case provider
      when 'stripe' then jsonb_build_object(
        'id', event_id, 'object', 'event', 'api_version', '2024-06-20', 'created', epoch, 'type', event_type,
        'livemode', true, 'pending_webhooks', 1,
        'request', jsonb_build_object('id', 'req_' || substr(h2, 1, 14), 'idempotency_key', pg_temp.uuid_of(h2)),
        'data', jsonb_build_object('object', jsonb_build_object(
          'id', subject, 'object', split_part(event_type, '.', 1), 'amount', 500 + (x * 99500)::int,
          'currency', 'usd', 'customer', 'cus_' || substr(md5('cus' || (x * $7)::int), 1, 14),
          'status', case when event_type like '%failed' then 'requires_payment_method' else 'succeeded' end,
          'created', epoch - 30, 'livemode', true,
          'description', 'Subscription update for workspace ' || substr(h2, 1, 8),
          'metadata', jsonb_build_object('workspace_id', 'ws_' || substr(h2, 9, 12), 'plan', 'pro', 'seats', (x * 40)::int),
          'payment_method', 'pm_' || substr(h2, 3, 24),
          'latest_charge', 'ch_' || substr(h2, 5, 24),
          'receipt_email', 'billing+' || substr(h2, 1, 6) || '@example.com',
          'payment_method_details', jsonb_build_object('type', 'card', 'card', jsonb_build_object(
            'brand', 'visa', 'last4', substr(h2, 1, 4), 'exp_month', 1 + (x * 11)::int, 'exp_year', 2028,
            'fingerprint', substr(h2, 5, 16), 'country', 'US', 'funding', 'credit',
            'checks', jsonb_build_object('cvc_check', 'pass', 'address_postal_code_check', 'pass'))),
          'billing_details', jsonb_build_object('name', 'Customer ' || substr(h2, 1, 6),
            'email', 'billing+' || substr(h2, 1, 6) || '@example.com',
            'address', jsonb_build_object('line1', (x * 999)::int || ' Market St', 'city', 'San Francisco',
              'postal_code', '94103', 'state', 'CA', 'country', 'US')),
          'lines', jsonb_build_object('object', 'list', 'has_more', false, 'data', jsonb_build_array(
            jsonb_build_object('id', 'il_' || substr(h, 1, 24), 'amount', 500 + (x * 99500)::int, 'currency', 'usd',
              'description', '1 × Pro (at $' || (5 + (x * 95)::int) || '.00 / month)', 'quantity', 1,
              'period', jsonb_build_object('start', epoch - 2592000, 'end', epoch),
              'price', jsonb_build_object('id', 'price_' || substr(h2, 2, 24), 'product', 'prod_' || substr(h2, 3, 14),
                'unit_amount', 500 + (x * 99500)::int, 'recurring', jsonb_build_object('interval', 'month'))))))),
        'previous_attributes', jsonb_build_object('status', 'requires_confirmation'))
      when 'github' then jsonb_build_object(
        'action', case when event_type in ('push', 'workflow_run') then null else 'opened' end,
        'ref', 'refs/heads/main', 'before', h2 || substr(h, 1, 8), 'after', h || substr(h2, 1, 8),
        'repository', jsonb_build_object('id', 100000 + (x * 2000)::int, 'name', 'repo-' || (x * 2000)::int,
          'full_name', subject, 'private', true, 'default_branch', 'main',
          'html_url', 'https://github.com/' || subject, 'url', 'https://api.github.com/repos/' || subject,
          'clone_url', 'https://github.com/' || subject || '.git', 'ssh_url', 'git@github.com:' || subject || '.git',
          'description', 'Service ' || (x * 2000)::int, 'language', 'TypeScript', 'size', (x * 90000)::int,
          'stargazers_count', (x * 50)::int, 'open_issues_count', (x * 30)::int, 'visibility', 'private',
          'created_at', epoch - 86400 * 400, 'pushed_at', epoch,
          'owner', jsonb_build_object('login', split_part(subject, '/', 1), 'id', 9000 + (x * 40)::int, 'type', 'Organization')),
        'sender', jsonb_build_object('login', 'dev' || (x * 300)::int, 'id', 50000 + (x * 300)::int, 'type', 'User'),
        'head_commit', jsonb_build_object('id', h || substr(h2, 1, 8), 'message', 'Fix the edge case in ' || substr(h2, 1, 10),
          'timestamp', to_char(received_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
          'author', jsonb_build_object('name', 'Dev ' || (x * 300)::int, 'email', 'dev' || (x * 300)::int || '@example.com')),
        'commits', jsonb_build_array(
          jsonb_build_object('id', h || substr(h2, 1, 8), 'message', 'Fix the edge case in ' || substr(h2, 1, 10),
            'url', 'https://github.com/' || subject || '/commit/' || h, 'distinct', true,
            'added', jsonb_build_array('src/' || substr(h2, 1, 8) || '.ts'), 'removed', '[]'::jsonb,
            'modified', jsonb_build_array('src/index.ts', 'README.md', 'package.json')),
          jsonb_build_object('id', h2 || substr(h, 1, 8), 'message', 'Add tests for ' || substr(h, 1, 10),
            'url', 'https://github.com/' || subject || '/commit/' || h2, 'distinct', true,
            'added', jsonb_build_array('test/' || substr(h, 1, 8) || '.test.ts'), 'removed', '[]'::jsonb,
            'modified', jsonb_build_array('src/index.ts'))),
        'pusher', jsonb_build_object('name', 'dev' || (x * 300)::int, 'email', 'dev' || (x * 300)::int || '@example.com'),
        'organization', jsonb_build_object('login', split_part(subject, '/', 1), 'id', 9000 + (x * 40)::int,
          'url', 'https://api.github.com/orgs/' || split_part(subject, '/', 1),
          'repos_url', 'https://api.github.com/orgs/' || split_part(subject, '/', 1) || '/repos',
          'description', 'Engineering'),
        'installation', jsonb_build_object('id', 30000000 + (x * 40)::int))
      when 'shopify' then jsonb_build_object(
        'id', subject::bigint, 'admin_graphql_api_id', 'gid://shopify/Order/' || subject,
        'email', 'buyer' || substr(h2, 1, 6) || '@example.com', 'created_at', to_char(received_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
        'currency', 'USD', 'total_price', to_char(5 + x * 495, 'FM99990.00'), 'financial_status', 'paid',
        'fulfillment_status', null, 'order_number', 1000 + (x * 900000)::int,
        'customer', jsonb_build_object('id', 7000000000000 + (x * 1000000)::bigint, 'email', 'buyer' || substr(h2, 1, 6) || '@example.com'),
        'line_items', jsonb_build_array(
          jsonb_build_object('id', 13000000000000 + (x * 1e9)::bigint, 'title', 'Item ' || substr(h2, 1, 6), 'quantity', 1 + (x * 3)::int,
            'price', to_char(5 + x * 95, 'FM99990.00'), 'sku', 'SKU-' || substr(h2, 7, 8)),
          jsonb_build_object('id', 13000000000001 + (x * 1e9)::bigint, 'title', 'Item ' || substr(h2, 11, 6), 'quantity', 1,
            'price', to_char(3 + x * 40, 'FM99990.00'), 'sku', 'SKU-' || substr(h2, 17, 8))),
        'shipping_address', jsonb_build_object('first_name', 'Buyer', 'last_name', substr(h2, 1, 6),
          'address1', (x * 999)::int || ' Main St', 'city', 'Springfield', 'province', 'Illinois', 'province_code', 'IL',
          'country', 'United States', 'country_code', 'US', 'zip', substr(h2, 1, 5), 'phone', '+1555' || substr(h2, 1, 7)),
        'billing_address', jsonb_build_object('first_name', 'Buyer', 'last_name', substr(h2, 1, 6),
          'address1', (x * 999)::int || ' Main St', 'city', 'Springfield', 'province_code', 'IL', 'country_code', 'US',
          'zip', substr(h2, 1, 5)),
        'shipping_lines', jsonb_build_array(jsonb_build_object('id', 4000000000000 + (x * 1e9)::bigint,
          'title', 'Standard Shipping', 'price', '5.00', 'code', 'STANDARD', 'source', 'shopify')),
        'tax_lines', jsonb_build_array(jsonb_build_object('title', 'State Tax', 'rate', 0.0625,
          'price', to_char(x * 30, 'FM99990.00'))),
        'subtotal_price', to_char(5 + x * 480, 'FM99990.00'), 'total_tax', to_char(x * 30, 'FM99990.00'),
        'total_discounts', '0.00', 'source_name', 'web', 'tags', '', 'test', false,
        'order_status_url', 'https://shop.example.com/orders/' || substr(h2, 1, 32) || '/authenticate?key=' || substr(h, 1, 32))
      when 'acme' then jsonb_build_object(
        'id', event_id, 'type', event_type, 'api_version', '2024-06-01', 'created', epoch, 'version', 1 + (x * 50)::int,
        'data', jsonb_build_object('id', subject, 'status', 'active', 'plan', 'pro', 'seats', (x * 40)::int))
      else jsonb_build_object(
        'id', event_id, 'type', event_type, 'timestamp', to_char(received_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
        'data', jsonb_build_object('id', subject, 'object', split_part(event_type, '.', 1),
          'email', 'user' || substr(h2, 1, 6) || '@example.com', 'name', 'Account ' || substr(h2, 7, 6)))
    end
  end,
  received_at, received_at - (x * interval '3 seconds'),
  case when status in ('completed', 'ignored', 'dead_letter') then received_at + (5 + x * 75) * interval '1 millisecond' end,
  case status when 'failed' then 1 + (x * 3)::int when 'dead_letter' then 10 else 0 end,
  case status when 'failed' then 'PostgresError P0001: quota exceeded'
    when 'dead_letter' then 'HandlerError: subscription ' || subject || ' not found' end,
  case when provider in ('github', 'shopify') then encode(sha256(convert_to(provider || event_id, 'UTF8')), 'hex') end,
  case when status = 'failed' then received_at + interval '5 minutes' else received_at end
from (
  select *,
    case provider
      when 'stripe' then (case split_part(event_type, '.', 1) when 'payment_intent' then 'pi_' when 'charge' then 'ch_'
        when 'invoice' then 'in_' when 'checkout' then 'cs_' when 'customer' then
          case when event_type like 'customer.subscription%' then 'sub_' else 'cus_' end else 'obj_' end)
        || substr(md5('stripe' || (x * $7)::int), 1, 24)
      when 'github' then 'org' || ((x * 2000)::int % 40) || '/repo-' || (x * 2000)::int
      when 'shopify' then (5000000000000 + (x * $7)::bigint)::text
      when 'acme' then 'sub_' || substr(md5('acme' || (x * $7)::int), 1, 20)
      else 'obj_' || substr(md5(provider || (x * $7)::int), 1, 16)
    end as subject
  from (
    select g, h, h2, x, received_at, extract(epoch from received_at)::bigint as epoch, provider,
      case provider
        when 'stripe' then 'evt_1' || substr(h, 1, 23)
        when 'github' then pg_temp.uuid_of(h)
        when 'shopify' then pg_temp.uuid_of(h)
        when 'acme' then 'evt_' || substr(h, 1, 24)
        when 'standard' then 'msg_' || substr(h, 1, 27)
        else substr(provider, 1, 3) || '_' || h
      end as event_id,
      (case provider
        when 'stripe' then array['payment_intent.succeeded', 'payment_intent.succeeded', 'charge.succeeded',
          'charge.succeeded', 'invoice.paid', 'invoice.payment_succeeded', 'customer.subscription.updated',
          'checkout.session.completed', 'invoice.created', 'invoice.payment_failed']
        when 'github' then array['push', 'push', 'push', 'pull_request', 'pull_request', 'check_run', 'check_run',
          'workflow_run', 'issues', 'issue_comment']
        when 'shopify' then array['orders/create', 'orders/create', 'orders/paid', 'orders/paid', 'orders/updated',
          'orders/updated', 'orders/fulfilled', 'products/update', 'customers/update', 'refunds/create']
        when 'acme' then array['subscription.updated', 'subscription.updated', 'subscription.updated',
          'subscription.created', 'subscription.created', 'subscription.canceled', 'subscription.updated',
          'subscription.updated', 'subscription.created', 'subscription.updated']
        when 'standard' then array['invoice.created', 'invoice.paid', 'user.created', 'user.updated', 'user.updated',
          'invoice.paid', 'invoice.created', 'payment.succeeded', 'payment.succeeded', 'user.deleted']
        else array['event_callback', 'Issue', 'transaction.completed', 'delivered', 'contact.creation',
          'event_callback', 'Issue', 'transaction.completed', 'delivered', 'contact.propertyChange']
      end)[1 + (rt * 10)::int % 10] as event_type,
      case when rs < 0.97 then 'completed' when rs < 0.995 then 'ignored' when rs < 0.997 then 'failed'
        when rs < 0.998 then 'parked' when rs < 0.999 then 'dead_letter'
        when $6::boolean then 'received' else 'completed' end::webhook_event_status as status
    from (
      select g, h, md5(h) as h2, x, rt, rs, received_at,
        case when rp < 0.35 then 'stripe' when rp < 0.55 then 'github' when rp < 0.70 then 'shopify'
          when rp < 0.85 then 'acme' when rp < 0.95 then 'standard'
          else (array['slack', 'linear', 'paddle', 'sendgrid', 'hubspot'])[1 + (x * 5)::int % 5] end as provider
      from (
        select g, md5($4 || ':' || g) as h, random() as rp, random() as rt, random() as rs, random() as x,
          $1::timestamptz + ((g - 1) + random()) * ($3::float8 / $2::int) * interval '1 second' as received_at
        from generate_series(1, $2::int) as g
      ) as drawn
    ) as sent
  ) as typed
) as described`;

/**
 * A UUID's text from 32 hex digits: GitHub's and Shopify's delivery ids. A function of the session
 * (pg_temp, which only a qualified name reaches), so the fill creates nothing in the migrations' schema.
 */
const UUID_OF = `create or replace function pg_temp.uuid_of(h text) returns text language sql immutable as
  $$ select substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-4' || substr(h, 14, 3) || '-a' || substr(h, 18, 3)
    || '-' || substr(h, 21, 12) $$`;

/** Outbox messages of one day's completed events, about one per ten events. `$1` start, `$2` end, `$3` last day. */
const MESSAGES_OF_DAY = `
insert into outbox_messages (topic, deduplication_key, payload, status, created_at, available_at, published_at,
  attempts, last_error)
select topic, provider || ':' || event_id || ':' || topic,
  jsonb_build_object('event_id', event_id, 'provider', provider, 'type', event_type,
    'resource', 'res_' || substr(md5(event_id), 1, 16), 'status', 'active', 'at', completed_at),
  status, completed_at,
  case status when 'pending' then completed_at + interval '30 seconds' else completed_at end,
  case status when 'published' then completed_at + (20 + r * 400) * interval '1 millisecond' end,
  case status when 'dead' then 10 when 'pending' then (r * 3)::int else 0 end,
  case status when 'dead' then 'HTTP 503 from the target' when 'pending' then
    case when r > 0.5 then 'HTTP 502 from the target' end end
from (
  select e.provider, e.event_id, e.event_type, e.completed_at, r,
    case e.provider when 'stripe' then 'payment.recorded' when 'github' then 'repository.activity'
      when 'shopify' then 'order.changed' when 'acme' then 'subscription.changed' else 'account.changed' end as topic,
    case when r < 0.005 then 'dead' when $3::boolean and r < 0.03 then 'pending' else 'published' end::outbox_status as status
  from (select *, random() as r from webhook_events
    where received_at >= $1::timestamptz and received_at < $2::timestamptz and status = 'completed') as e
  where random() < 0.103
) as m`;

export interface FillResult {
  events: number;
  messages: number;
  fillMs: number;
  vacuumMs: number;
}

/**
 * Fills `sql`'s database (migrated, empty) with `events` events ending at `nowMs`, `jobs` days at a
 * time, then VACUUM ANALYZE and a CHECKPOINT (which needs a superuser or pg_checkpoint). `seed`
 * keeps the ids of two fills apart. `sql` must allow `jobs` connections.
 */
export async function fillMonth(
  sql: postgres.Sql,
  options: { events: number; nowMs: number; seed: string; jobs: number; log: (line: string) => void },
): Promise<FillResult> {
  const { events, nowMs, seed } = options;
  const started = performance.now();
  const firstMs = nowMs - FILL_DAYS * DAY_MS;
  const payloadCutoff = new Date(nowMs - PAYLOAD_DAYS * DAY_MS).toISOString();
  const distinctObjects = Math.max(100, Math.floor(events / 4));
  let nextDay = 0;
  let messages = 0;
  let stored = 0;
  const fillDay = async (connection: postgres.ReservedSql, day: number) => {
    const startMs = firstMs + day * DAY_MS;
    const endMs = Math.min(startMs + DAY_MS, nowMs);
    const rows = rowsOfDay(events, day);
    const last = day === FILL_DAYS - 1;
    const dayStarted = performance.now();
    const inserted = await connection.unsafe(EVENTS_OF_DAY, [
      new Date(startMs).toISOString(),
      rows,
      (endMs - startMs) / 1000,
      `${seed}:${day}`,
      payloadCutoff,
      last,
      distinctObjects,
    ]);
    const outbox = await connection.unsafe(MESSAGES_OF_DAY, [
      new Date(startMs).toISOString(),
      new Date(endMs).toISOString(),
      last,
    ]);
    stored += inserted.count;
    messages += outbox.count;
    options.log(
      `  day ${day + 1}/${FILL_DAYS}: ${inserted.count} events, ${outbox.count} messages ` +
        `(${((performance.now() - dayStarted) / 1000).toFixed(1)} s)`,
    );
  };
  const worker = async () => {
    const connection = await sql.reserve();
    try {
      await connection.unsafe(UUID_OF);
      // Each day commits on its own; waiting for the WAL flush of each buys nothing here.
      await connection.unsafe('set synchronous_commit = off');
      while (nextDay < FILL_DAYS) {
        const day = nextDay++;
        await fillDay(connection, day);
      }
    } finally {
      connection.release();
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.jobs) }, worker));
  const fillMs = performance.now() - started;
  const vacuumStarted = performance.now();
  await sql.unsafe('vacuum (analyze)');
  // The fill's dirty pages written out now, not by a checkpoint in the middle of the first timed phase.
  await sql.unsafe('checkpoint');
  return { events: stored, messages, fillMs, vacuumMs: performance.now() - vacuumStarted };
}
