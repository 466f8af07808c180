// The dashboard's one script, served inline with a per-response CSP nonce (no build step, no file to
// fetch). It carries the admin token, which a plain navigation cannot: the token lives in
// sessionStorage (this tab only), every page is fetched with `Authorization: Bearer`, and links,
// filter forms, paging, refresh and the back button all go through `load`, which swaps the page in
// and keeps the address bar (filters included) in step. Replay, retry, pause (after a confirmation),
// resume, bulk jobs and cancel post to the JSON API and report the outcome as it is: a failure in red
// with its reason. The operator's name is asked once and kept for the session, as is the choice to
// refresh every 30 seconds.
import { REPLAYABLE } from '../../ops/actions/replay.ts';

export const DASHBOARD_SCRIPT = `
const TOKEN = 'webhook-inbox-admin-token';
// The statuses replay takes an event from: still one of them after a replay means it failed again.
const WAITING = ${JSON.stringify(REPLAYABLE)};
const OPERATOR = 'webhook-inbox-operator';
const AUTO = 'webhook-inbox-auto-refresh';
const auth = () => { const t = sessionStorage.getItem(TOKEN); return t ? { authorization: 'Bearer ' + t } : {}; };

function say(text, kind) {
  const notice = document.getElementById('notice');
  notice.textContent = text || '';
  notice.className = kind || '';
  notice.setAttribute('role', kind === 'error' ? 'alert' : 'status');
}

function swap(html) {
  const page = new DOMParser().parseFromString(html, 'text/html');
  const next = page.getElementById('app');
  if (!next) return false;
  // On a phone the rows come first: a list's filters start folded (their summary counts those in use).
  if (matchMedia('(max-width: 700px)').matches) {
    for (const fold of next.querySelectorAll('details.filter-fold')) fold.open = false;
  }
  document.getElementById('app').replaceWith(next);
  document.title = page.title;
  // A phone's section links scroll sideways: bring the current one (Jobs, Refused) into sight.
  const sections = document.querySelector('header nav');
  const current = sections && sections.querySelector('a[aria-current]');
  if (current) {
    const overflow = current.getBoundingClientRect().right - sections.getBoundingClientRect().right;
    if (overflow > 0) sections.scrollLeft += overflow + 24;
  }
  const operator = document.getElementById('operator');
  if (operator) operator.value = sessionStorage.getItem(OPERATOR) || '';
  const auto = document.getElementById('auto-refresh');
  if (auto) auto.checked = sessionStorage.getItem(AUTO) === 'on';
  return true;
}

// Without a token, or with one the server refused: the sign-in page, which a request without the
// header always gets.
async function showSignIn(message) {
  const res = await fetch(location.pathname, { cache: 'no-store' });
  swap(await res.text());
  say(message, message ? 'error' : '');
  const field = document.querySelector('#sign-in input[name="token"]');
  if (field) field.focus();
}

async function load(url, options) {
  const opts = options || {};
  let res;
  try {
    res = await fetch(url, { headers: auth(), cache: 'no-store' });
  } catch {
    say('The service did not answer; try Refresh.', 'error');
    return;
  }
  if (res.status === 401) {
    const had = sessionStorage.getItem(TOKEN) !== null;
    sessionStorage.removeItem(TOKEN);
    await showSignIn(had ? 'That token was not accepted: check ADMIN_TOKEN and sign in again.' : '');
    return;
  }
  if (!swap(await res.text())) {
    say('The page could not be loaded (' + res.status + ').', 'error');
    return;
  }
  if (opts.push) history.pushState(null, '', url);
  say(opts.message || '', opts.kind || '');
  if (opts.push) { const main = document.getElementById('main'); if (main) main.focus(); }
}

const here = () => location.pathname + location.search;

function operatorName() {
  const field = document.getElementById('operator');
  const name = (field ? field.value : '').trim();
  if (name) sessionStorage.setItem(OPERATOR, name);
  return name;
}

const refusal = (res, body) => 'refused (' + (body.error || res.status) + (body.field ? ', ' + body.field : '') + ')';

function outcome(kind, target, res, body) {
  if (!res.ok) return [target + ': ' + refusal(res, body), 'error'];
  if (kind === 'pause') {
    const until = body.sender.pause.until;
    const warnings = (body.warnings || []).join('. ');
    const text = target + ': paused ' + (until ? 'until ' + until.slice(0, 16).replace('T', ' ') + ' UTC' : 'until resumed');
    return warnings ? [text + '. ' + warnings, 'warn'] : [text, 'ok'];
  }
  if (kind === 'resume') {
    return body.resumed ? [target + ': resumed, its deliveries are accepted again', 'ok'] : [target + ': was not paused (nothing changed)', 'warn'];
  }
  if (kind === 'destination-pause') {
    return [target + ': paused, its messages stay pending until it is resumed', 'ok'];
  }
  if (kind === 'destination-resume') {
    return body.resumed ? [target + ': resumed, its messages are published again', 'ok'] : [target + ': was not paused (nothing changed)', 'warn'];
  }
  if (kind === 'cancel') {
    return body.cancelled
      ? ['Job ' + target + ': cancelled after ' + body.job.processed + ' of ' + body.job.total, 'ok']
      : ['Job ' + target + ': not cancelled, it is ' + body.job.status + ' already', 'warn'];
  }
  if (kind === 'retry') {
    // Pending again, but its destination is not publishing: it only waits, and says why.
    if (body.retried && body.message.waiting) {
      return ['Message ' + target + ': retried, pending again, waiting: ' + body.message.waiting, 'warn'];
    }
    return body.retried
      ? ['Message ' + target + ': retried, pending again', 'ok']
      : ['Message ' + target + ': not retried, it is ' + body.message.status + ' (only dead messages are retried)', 'warn'];
  }
  const status = body.event.status;
  if (body.applied) return [target + ': replayed, now ' + status, 'ok'];
  // Not applied: it failed or parked again (it was and still is waiting for an operator), or the
  // replay did not run it (not replayable, or taken by another worker first).
  if (WAITING.includes(body.before) && WAITING.includes(status)) {
    return [target + ': replay failed, now ' + status + ': ' + (body.reason || body.event.last_error || 'no reason recorded'), 'error'];
  }
  return [target + ': nothing replayed: ' + body.reason, 'warn'];
}

// "Replay all" / "Retry all": the exact count first (a dry run), the operator's confirmation, then the
// job; the jobs page then shows its progress.
async function bulk(form, operator) {
  const kind = form.getAttribute('data-bulk');
  const noun = form.getAttribute('data-noun');
  const create = (dryRun) => fetch('/admin/api/jobs', {
    method: 'POST',
    headers: { ...auth(), 'content-type': 'application/json' },
    body: JSON.stringify({ kind, filter: JSON.parse(form.getAttribute('data-filter')), operator, dry_run: dryRun }),
  });
  let res = await create(true);
  let body = await res.json().catch(() => ({}));
  if (!res.ok) { say('Counting: ' + refusal(res, body), 'error'); return; }
  if (body.count === 0) { say('Nothing matches any more: no job was created.', 'warn'); return; }
  const verb = form.getAttribute('data-verb');
  // A retry into a destination that is not publishing says so first: those messages will only wait.
  const warnings = (body.warnings || []).map((warning) => 'Warning: ' + warning.text + '\\n\\n').join('');
  if (!confirm(warnings + verb + ' all ' + body.count + ' matching ' + noun + (body.count === 1 ? '' : 's') + ' as a job?')) {
    say('Nothing was done.', '');
    return;
  }
  res = await create(false);
  body = await res.json().catch(() => ({}));
  if (!res.ok) { say(refusal(res, body), 'error'); return; }
  if (!body.job) { say('Nothing matches any more: no job was created.', 'warn'); return; }
  await load('/admin/jobs', { push: true, message: verb + ' job queued: ' + body.job.total + ' ' + noun + '(s).', kind: 'ok' });
}

document.addEventListener('DOMContentLoaded', () => {
  if (sessionStorage.getItem(TOKEN) && document.getElementById('sign-in')) load(here());
});

window.addEventListener('popstate', () => load(here()));

document.addEventListener('click', (event) => {
  const target = event.target;
  if (!(target instanceof Element)) return;
  if (target.closest('#refresh')) { load(here(), { message: 'Refreshed.', kind: 'ok' }); return; }
  if (target.closest('#sign-out')) { sessionStorage.removeItem(TOKEN); showSignIn(''); return; }
  const link = target.closest('a[href^="/admin"]');
  if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
  event.preventDefault();
  load(link.getAttribute('href'), { push: true });
});

document.addEventListener('input', (event) => {
  if (event.target instanceof Element && event.target.id === 'operator') operatorName();
  if (event.target instanceof Element && event.target.id === 'auto-refresh') {
    sessionStorage.setItem(AUTO, event.target.checked ? 'on' : 'off');
  }
});

// Auto-refresh, when asked for: the same page again every 30 s, keeping the notice, and never while
// the operator is typing in a field or the tab is hidden.
setInterval(() => {
  if (sessionStorage.getItem(AUTO) !== 'on' || !sessionStorage.getItem(TOKEN)) return;
  if (document.visibilityState !== 'visible') return;
  const active = document.activeElement;
  const typing = active && (active.tagName === 'SELECT' || (active.tagName === 'INPUT' && active.type !== 'checkbox'));
  if (typing) return;
  const notice = document.getElementById('notice');
  load(here(), { message: notice.textContent, kind: notice.className });
}, 30000);

document.addEventListener('submit', async (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement)) return;
  event.preventDefault();
  if (form.id === 'sign-in') {
    sessionStorage.setItem(TOKEN, form.elements.token.value);
    await load(here());
    return;
  }
  if (form.method === 'get') {
    // Filters: empty fields are left out, so the address shows only what filters.
    const query = new URLSearchParams();
    for (const [name, value] of new FormData(form)) if (String(value).trim() !== '') query.set(name, String(value).trim());
    const text = query.toString();
    await load(form.getAttribute('action') + (text ? '?' + text : ''), { push: true });
    return;
  }
  const action = form.getAttribute('data-action');
  const bulkKind = form.getAttribute('data-bulk');
  if (!action && !bulkKind) return;
  const operator = operatorName();
  if (!operator) {
    say('Type your name in the Operator field first: every action is recorded with it.', 'error');
    document.getElementById('operator').focus();
    return;
  }
  if (form.dataset.confirm && !confirm(form.dataset.confirm)) return;
  // The form's own fields (a pause's length and note) go with the name; empty ones are left out.
  const fields = { operator };
  for (const field of form.querySelectorAll('[name]')) {
    const value = String(field.value).trim();
    if (value !== '') fields[field.name] = field.hasAttribute('data-number') ? Number(value) : value;
  }
  const button = form.querySelector('button');
  if (button) button.disabled = true;
  if (bulkKind) {
    await bulk(form, operator);
    if (button) button.disabled = false;
    return;
  }
  const res = await fetch(action, {
    method: 'POST',
    headers: { ...auth(), 'content-type': 'application/json' },
    body: JSON.stringify(fields),
  });
  const body = await res.json().catch(() => ({}));
  const [message, kind] = outcome(form.getAttribute('data-kind'), form.getAttribute('data-target'), res, body);
  await load(here(), { message, kind });
});
`;
