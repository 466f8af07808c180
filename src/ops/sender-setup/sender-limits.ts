// Configuration checked against what the enabled senders themselves do, which no variable says by
// itself: a retention that outlives every retry (a row is the deduplication key: deleted sooner, a
// late retry is a new event and is applied again), and a signed URL the sender can actually sign.
// config.ts knows no sender, so these checks live above the sender descriptions (whose `redelivery`
// gives each retry window) and ask the registry which senders are enabled; every entry runs them
// right after parseConfig.
import { type Config, ConfigError, type ConfigSources } from '../../config.ts';
import { senderVariable } from '../../sender-variables.ts';
import { enabledSenderNames, redeliveryBySender } from '../../senders/registry.ts';
import { senderDescriptions } from '../../senders/senders.ts';

/** Senders that append a query of their own to the configured URL and sign the result (Twilio). */
const APPENDS_QUERY = new Set(
  senderDescriptions
    .filter((description) => description.signed?.includes('{url}?') === true)
    .map((description) => description.name),
);

type Checked = Pick<Config, 'NODE_ENV' | 'EVENT_RETENTION_DAYS' | 'senderSettings'>;

/** What is wrong with EVENT_RETENTION_DAYS, if anything: the senders whose retries outlast it. */
function retentionProblem(config: Checked): string | undefined {
  const enabled = new Set(enabledSenderNames(config.senderSettings));
  // In the configuration's order, as the variables were given.
  const outlasting = Object.keys(config.senderSettings).flatMap((name) => {
    const days = redeliveryBySender.get(name)?.windowDays;
    return !enabled.has(name) || days === undefined || days <= config.EVENT_RETENTION_DAYS ? [] : [{ name, days }];
  });
  if (outlasting.length === 0) return undefined;
  const longest = Math.max(...outlasting.map((sender) => sender.days));
  const senders = outlasting.map((sender) => `${sender.name} (${sender.days})`).join(', ');
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
