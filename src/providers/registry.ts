// The schemes this service speaks, one line each. A provider is enabled when its secret is set.
import type { ProviderSecrets } from '../config.ts';
import { acme } from './acme.ts';
import { github } from './github.ts';
import type { HmacKey } from './hmac.ts';
import { shopify } from './shopify.ts';
import { slack } from './slack.ts';
import { standard } from './standard.ts';
import { stripe } from './stripe.ts';
import type { WebhookProvider } from './types.ts';

export const providers: readonly WebhookProvider[] = [acme, standard, stripe, github, shopify, slack];

export interface EnabledProvider {
  provider: WebhookProvider;
  keys: readonly HmacKey[];
}

/** Imports every configured key once; providers without a secret are absent (their route is 404). */
export async function enableProviders(secrets: ProviderSecrets): Promise<ReadonlyMap<string, EnabledProvider>> {
  const enabled = new Map<string, EnabledProvider>();
  for (const provider of providers) {
    const configured = secrets[provider.name] ?? [];
    if (configured.length > 0) enabled.set(provider.name, { provider, keys: await provider.importKeys(configured) });
  }
  return enabled;
}
