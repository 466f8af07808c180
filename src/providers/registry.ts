// The senders this service speaks, and how each is enabled: a sender is enabled when its secret
// (or, for one signing with a private key, its public key) is set. Every sender is a description
// in senders.ts run by described.ts; one that could not be described would be a WebhookProvider of
// its own, listed here beside them.
import { type ProviderSecrets, providerVariable } from '../config.ts';
import { describedProvider } from './described.ts';
import type { VerifyKey } from './hmac.ts';
import { senderDescriptions } from './senders.ts';
import type { Credentials, WebhookProvider } from './types.ts';

export const providers: readonly WebhookProvider[] = senderDescriptions.map(describedProvider);

/**
 * The configured names that are no sender's (a typo such as `GTIHUB_WEBHOOK_SECRET`): their variables
 * configure nothing, which start-up says instead of leaving a route silently 404.
 */
export function unknownSenderNames(configured: Iterable<string>): string[] {
  const known = new Set(providers.map((provider) => provider.name));
  return [...configured].filter((name) => !known.has(name)).sort();
}

export interface EnabledProvider {
  provider: WebhookProvider;
  keys: readonly VerifyKey[];
  /** The public URL the sender signs, for providers that sign it. */
  url?: string;
}

/** The configuration variables of one provider, by the contract's naming rule. */
export interface ProviderVariables {
  secret?: string;
  publicKey?: string;
  url?: string;
}

const SECRET_ONLY: Credentials = { secret: true, publicKey: false, url: false };

export function providerVariables(provider: WebhookProvider): ProviderVariables {
  const credentials = provider.credentials ?? SECRET_ONLY;
  return {
    ...(credentials.secret ? { secret: providerVariable(provider.name, 'SECRET') } : {}),
    ...(credentials.publicKey ? { publicKey: providerVariable(provider.name, 'PUBLIC_KEY') } : {}),
    ...(credentials.url ? { url: providerVariable(provider.name, 'URL') } : {}),
  };
}

export interface ProviderExtras {
  /** Public keys by provider name, for senders that sign with a private key. */
  publicKeys?: ProviderSecrets;
  /** Signed public URLs by provider name. */
  urls?: Readonly<Record<string, string>>;
}

/**
 * Imports every configured key once; providers with neither a secret nor a public key are absent
 * (their route is 404). A provider that cannot be enabled as configured (a malformed key, an
 * invalid description, a signed URL not configured) rejects, naming it and no value.
 */
export async function enableProviders(
  secrets: ProviderSecrets,
  extras: ProviderExtras = {},
): Promise<ReadonlyMap<string, EnabledProvider>> {
  const enabled = new Map<string, EnabledProvider>();
  for (const provider of providers) {
    const configured = secrets[provider.name] ?? [];
    const publicKeys = extras.publicKeys?.[provider.name] ?? [];
    if (configured.length === 0 && publicKeys.length === 0) continue;
    const url = extras.urls?.[provider.name];
    const variables = providerVariables(provider);
    // A key of a kind the sender does not use would leave it enabled with nothing to verify by.
    const unused = [
      configured.length > 0 && variables.secret === undefined ? providerVariable(provider.name, 'SECRET') : undefined,
      publicKeys.length > 0 && variables.publicKey === undefined
        ? providerVariable(provider.name, 'PUBLIC_KEY')
        : undefined,
      url !== undefined && variables.url === undefined ? providerVariable(provider.name, 'URL') : undefined,
    ].filter((variable) => variable !== undefined);
    if (unused.length > 0) {
      const expected = [variables.secret, variables.publicKey, variables.url].filter((name) => name !== undefined);
      throw new Error(`${provider.name}: takes ${expected.join(' and ')}, not ${unused.join(' or ')}`);
    }
    if (variables.url !== undefined && url === undefined) {
      throw new Error(`${provider.name}: signs the URL it posts to: set ${variables.url}`);
    }
    const keys = await provider.importKeys(configured, publicKeys);
    enabled.set(provider.name, { provider, keys, ...(url === undefined ? {} : { url }) });
  }
  return enabled;
}
