// Which senders the service enables, as the CLI reads them from the same environment as the server
// (a sender is enabled by its secret or public key; acme also by `npm start`'s development secret):
// the senders an operator may pause from the command line.
import type { Config } from '../config.ts';
import { developmentSecretUse } from '../entry/setup/dev-secret.ts';
import { allProviders } from '../providers/registry.ts';

export function enabledSenderNames(config: Pick<Config, 'NODE_ENV' | 'senderSettings'>): ReadonlySet<string> {
  const names = allProviders
    .map((provider) => provider.name)
    .filter((name) => {
      const settings = config.senderSettings[name];
      return settings !== undefined && settings.secrets.length + settings.publicKeys.length > 0;
    });
  if (developmentSecretUse(config).inUse) names.push('acme');
  return new Set(names);
}
