// Where one event lives over HTTP, for every id a sender can store. The path form
// (`/admin/api/events/:provider/:eventId`, `/admin/events/:provider/:eventId`) carries any id once
// percent-encoded, except `.` and `..`: every URL parser (browsers, fetch, curl) removes those dot
// segments, spelt `%2e` or not, before the request leaves, so the request would land on another
// path. Those ids go in the query instead (`/admin/api/event?provider=&event_id=`, the same for the
// dashboard at `/admin/event`), which no parser rewrites. Links and actions are built only here.

/** The query-form paths: the API's show and replay, and the dashboard's event page. */
export const EVENT_BY_QUERY = { api: '/admin/api/event', dashboard: '/admin/event' } as const;

const PATH_FORM = { api: '/admin/api/events', dashboard: '/admin/events' } as const;

/** Whether a percent-encoded path segment is one URL normalisation removes. */
function isDotSegment(segment: string): boolean {
  return segment === '.' || segment === '..';
}

/**
 * The URL of an event on the API or the dashboard, or of its replay (`/replay`, API only): the path
 * form for ids that survive in a path, the query form for the others.
 */
export function eventUrl(
  surface: keyof typeof EVENT_BY_QUERY,
  key: { provider: string; eventId: string },
  action: '' | '/replay' = '',
): string {
  const segment = encodeURIComponent(key.eventId);
  if (!isDotSegment(segment)) {
    return `${PATH_FORM[surface]}/${encodeURIComponent(key.provider)}/${segment}${action}`;
  }
  const query = new URLSearchParams({ provider: key.provider, event_id: key.eventId });
  return `${EVENT_BY_QUERY[surface]}${action}?${query.toString()}`;
}
