// Which senders the service enables, as the CLI reads them from the same environment as the server:
// the registry's answer (senders/registry.ts), with acme where `npm start` would use its
// development secret (entry/setup/dev-secret.ts). The senders an operator may pause from the command line.
import type { Config } from '../config.ts';
import { developmentSecretUse } from '../entry/setup/dev-secret.ts';
import { enabledSenderNames } from '../senders/registry.ts';

export function enabledSenders(config: Pick<Config, 'NODE_ENV' | 'senderSettings'>): ReadonlySet<string> {
  return new Set(enabledSenderNames(config.senderSettings, { developmentSecret: developmentSecretUse(config).inUse }));
}
