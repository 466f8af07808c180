// Configuration checked against what the enabled senders themselves do, which no variable says by
// itself: a retention that outlives every retry (a row is the deduplication key: deleted sooner, a
// late retry is a new event and is applied again), and a signed URL the sender can actually sign.
// config.ts knows no sender, so these checks live above the sender descriptions; every entry runs
// them right after parseConfig.
import { type Config, ConfigError, type ConfigSources } from '../../config.ts';
import { senderDescriptions } from '../../providers/senders.ts';
import { senderVariable } from '../../sender-variables.ts';

/**
 * The longest a sender may deliver one event again after its first attempt, in whole days (rounded
 * up): its automatic retries, or the manual redelivery its dashboard offers where that is longer.
 * Where a sender publishes no figure, three days (Stripe's, the longest common one) is assumed. The
 * sources are in docs/providers.md ("Retry windows"); test/start-promises.test.ts keeps both in step.
 */
export const RETRY_WINDOW_DAYS: Readonly<Record<string, number>> = {
  acme: 3,
  standard: 2,
  stripe: 3,
  github: 3,
  shopify: 2,
  slack: 1,
  paddle: 3,
  mux: 1,
  workos: 3,
  sendgrid: 1,
  discord: 3,
  coinbase: 3,
  openai: 3,
  polar: 3,
  linear: 1,
  razorpay: 1,
  line: 3,
  easypost: 3,
  gocardless: 3,
  hubspot: 1,
  square: 3,
  telnyx: 3,
  zoom: 1,
  notion: 3,
  box: 3,
  pagerduty: 3,
  twilio: 3,
  replicate: 3,
  webflow: 3,
  sanity: 1,
  gitlab: 7,
};

/** Senders that append a query of their own to the configured URL and sign the result (Twilio). */
const APPENDS_QUERY = new Set(
  senderDescriptions
    .filter((description) => description.signed?.includes('{url}?') === true)
    .map((description) => description.name),
);

type Checked = Pick<Config, 'NODE_ENV' | 'EVENT_RETENTION_DAYS' | 'senderSettings'>;

/** What is wrong with EVENT_RETENTION_DAYS, if anything: the senders whose retries outlast it. */
function retentionProblem(config: Checked): string | undefined {
  const enabled = Object.entries(config.senderSettings)
    .filter(([, settings]) => settings.secrets.length + settings.publicKeys.length > 0)
    .flatMap(([name]) => {
      const days = RETRY_WINDOW_DAYS[name];
      return days === undefined || days <= config.EVENT_RETENTION_DAYS ? [] : [{ name, days }];
    });
  if (enabled.length === 0) return undefined;
  const longest = Math.max(...enabled.map((sender) => sender.days));
  const senders = enabled.map((sender) => `${sender.name} (${sender.days})`).join(', ');
  return (
    `shorter than the retry window in days of ${senders}; set at least ${longest}, ` +
    'or a retry that arrives after the purge is applied again'
  );
}

/**
 * Refuses what can never work (a signed URL with a query string where the sender appends its own),
 * and a retention shorter than an enabled sender's retry window: refused in production, warned about
 * elsewhere (a development database is purged by hand, and its events are test events).
 */
export function checkSenderLimits(config: Checked, sources: Pick<ConfigSources, 'warn'> = {}): void {
  const problems: string[] = [];
  for (const [name, settings] of Object.entries(config.senderSettings)) {
    // Even a bare `?`: the sender's own query would follow it as `&…`, never as the `?…` that is signed.
    if (!APPENDS_QUERY.has(name) || settings.url?.includes('?') !== true) continue;
    problems.push(`${senderVariable(name, 'url')}: must have no query string: ${name} appends its own and signs both`);
  }
  const retention = retentionProblem(config);
  if (retention !== undefined && config.NODE_ENV === 'production') problems.push(`EVENT_RETENTION_DAYS: ${retention}`);
  else if (retention !== undefined) sources.warn?.({ variable: 'EVENT_RETENTION_DAYS', message: retention });
  if (problems.length > 0) throw new ConfigError(problems);
}
