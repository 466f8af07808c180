// The frame of an item's page (one event, one message): the list it belongs to, its fields, the
// action it offers (Replay, Retry: a form the page's script posts to the API), and its stored
// payload. Pure rendering.
import type { Child, FC } from 'hono/jsx';
import { exactJsonText } from '../../lib/json-out.ts';
import type { DashboardList } from './list-page.tsx';
import { Status } from './rows.tsx';

/** Above this many bytes a payload starts folded: the page stays readable, one click opens it. */
const FOLD_PAYLOAD_BYTES = 2048;

export const ActionForm: FC<{ action: string; target: string; kind: 'replay' | 'retry' | 'cancel'; label: string }> = ({
  action,
  target,
  kind,
  label,
}) => (
  <form method="post" data-action={action} data-target={target} data-kind={kind} class="action">
    <button type="submit">{label}</button>
  </form>
);

export const Field: FC<{ name: string; children?: Child }> = ({ name, children }) => (
  <>
    <dt>{name}</dt>
    <dd>{children}</dd>
  </>
);

/** The stored payload, indented, every number as stored (lib/json-out.ts); folded when large. */
const Payload: FC<{ payload: unknown }> = ({ payload }) => {
  if (payload === null || payload === undefined) return <p class="empty">Payload purged by retention.</p>;
  const text = exactJsonText(payload, 2);
  const bytes = new TextEncoder().encode(exactJsonText(payload)).length;
  return (
    <details open={bytes <= FOLD_PAYLOAD_BYTES} class="payload">
      <summary>Payload ({bytes.toLocaleString('en')} bytes)</summary>
      <pre id="payload">{text}</pre>
    </details>
  );
};

/**
 * One item's page: its list and `context` above its id, its fields (status first, then `children`;
 * the list's item attribute holds `target`, as on the list's rows), the action it offers, and its
 * stored payload.
 */
export const ItemPage: FC<{
  of: DashboardList;
  context: string;
  id: string;
  target: string;
  item: { status: string; payload?: unknown };
  action: Child;
  /** Shown under the action, above the payload (a message's per-destination outcomes). */
  after?: Child;
  children: Child;
}> = ({ of, context, id, target, item, action, after, children }) => (
  <>
    <p class="crumbs">
      <a href={of.path}>{of.title}</a> / {context}
    </p>
    <h1 tabindex={-1} class="id">
      {id}
    </h1>
    <dl class="fields" {...{ [of.itemAttribute]: target }}>
      <Field name="status">
        <Status status={item.status} />
      </Field>
      {children}
    </dl>
    <div class="act">{action}</div>
    {after}
    <h2>Payload</h2>
    <Payload payload={item.payload} />
  </>
);
