// What a dashboard route shows instead of its page: a refused filter (400, naming the field as the
// API does) and an unknown id (404). Each links back to the list it came from.
import type { FC } from 'hono/jsx';

/** Which query parameter a list page refused, and whether it has no such filter at all. */
export interface Refusal {
  field: string;
  unknown: boolean;
}

export const RefusedFilterPage: FC<{ list: string; refusal: Refusal }> = ({ list, refusal }) => (
  <>
    <h1 tabindex={-1}>That filter was refused</h1>
    <p class="error">
      {refusal.unknown ? (
        <>
          This page has no filter named <strong>{refusal.field}</strong>.
        </>
      ) : (
        <>
          The value of <strong>{refusal.field}</strong> is not one this page accepts.
        </>
      )}
    </p>
    <p>
      <a href={list}>Start again</a>
    </p>
  </>
);

export const NotFoundPage: FC<{ list: string; what: string }> = ({ list, what }) => (
  <>
    <h1 tabindex={-1}>Not found</h1>
    <p>No {what} has that id.</p>
    <p>
      <a href={list}>Back to the list</a>
    </p>
  </>
);
