// The senders this service speaks, and how each is enabled: a sender is enabled when its secret
// (or, for one signing with a private key, its public key) is set, decided here once for every
// reader (the entries, the start-up checks, the CLI). Every sender is a description in senders.ts
// run by described.ts; one that could not be described would be a Sender of its own,
// listed here beside them.
import {
  type CredentialKind,
  enablingVariables,
  type KeysBySender,
  type ProviderExtras,
  type SenderSettings,
  type SettingsBySender,
  senderVariable,
} from '../sender-variables.ts';
import { describedSender } from './described.ts';
import type { Redelivery } from './description.ts';
import { senderDescriptions } from './senders.ts';
import type { Sender } from './types.ts';
import type { VerifyKey } from './verify.ts';

/** Every sender this service speaks, enabled or not. */
export const allSenders: readonly Sender[] = senderDescriptions.map(describedSender);

/** The same by name: what reads a stored event back (the worker, a replay) asks its schema version of. */
export const sendersByName: ReadonlyMap<string, Sender> = new Map(allSenders.map((sender) => [sender.name, sender]));

/** What each sender does with a refused delivery (its description's `redelivery`), by name. */
export const redeliveryBySender: ReadonlyMap<string, Redelivery> = new Map(
  senderDescriptions.map((description) => [description.name, description.redelivery]),
);

/** The rule for "enabled", written once: a secret or a public key set (a URL alone enables nothing). */
const enables = (keys: Pick<SenderSettings, 'secrets' | 'publicKeys'>): boolean =>
  keys.secrets.length + keys.publicKeys.length > 0;

/**
 * The senders a configuration enables, by name in the registry's order: the answer for whatever
 * holds only the configuration (the start-up checks, the CLI's `senders` commands). With
 * `developmentSecret` (entry/setup/dev-secret.ts says when `npm start` uses one), acme too.
 * enableSenders enables exactly these, given the same keys.
 */
export function enabledSenderNames(
  settings: SettingsBySender,
  options: { developmentSecret?: boolean } = {},
): string[] {
  return allSenders
    .map((sender) => sender.name)
    .filter((name) => {
      const configured = settings[name];
      return (
        (configured !== undefined && enables(configured)) || (name === 'acme' && options.developmentSecret === true)
      );
    });
}

/** The configured senders, split once by whether a sender has that name. */
export interface ConfiguredSenders {
  /** The variables set for known senders that enable one (secrets, public keys): "a sender is configured". */
  enablingVariables: readonly string[];
  /**
   * Those of names that are no sender's (a typo such as `GTIHUB_WEBHOOK_SECRET`): they configure
   * nothing, which start-up says instead of leaving a route silently 404.
   */
  unknownVariables: readonly string[];
}

/**
 * The one rule for "a sender is configured", read by every entry (production's refusal, the
 * Worker's, acme's development secret): only a variable naming a sender counts.
 */
export function configuredSenders(settings: SettingsBySender): ConfiguredSenders {
  const known = new Set(allSenders.map((sender) => sender.name));
  const split = (isKnown: boolean) =>
    Object.fromEntries(Object.entries(settings).filter(([name]) => known.has(name) === isKnown));
  return { enablingVariables: enablingVariables(split(true)), unknownVariables: enablingVariables(split(false)) };
}

export interface EnabledSender {
  sender: Sender;
  keys: readonly VerifyKey[];
  /** The public URL the sender signs, for senders that sign it. */
  url?: string;
}

/** The variables a sender reads, by kind, named by the contract's naming rule. */
export type CredentialVariables = Partial<Record<CredentialKind, string>>;

const KINDS: readonly CredentialKind[] = ['secret', 'publicKey', 'url'];

function variablesOf(sender: Sender): CredentialVariables {
  const credentials = sender.credentials ?? { secret: true, publicKey: false, url: false };
  return Object.fromEntries(
    KINDS.filter((kind) => credentials[kind]).map((kind) => [kind, senderVariable(sender.name, kind)]),
  );
}

/**
 * Imports every configured key once; senders with neither a secret nor a public key are absent
 * (their route is 404). A sender that cannot be enabled as configured (a malformed key, an
 * invalid description, a signed URL not configured) rejects, naming it and no value.
 */
export async function enableSenders(
  secrets: KeysBySender,
  extras: ProviderExtras = {},
): Promise<ReadonlyMap<string, EnabledSender>> {
  const enabled = new Map<string, EnabledSender>();
  for (const sender of allSenders) {
    const configured = secrets[sender.name] ?? [];
    const publicKeys = extras.publicKeys?.[sender.name] ?? [];
    if (!enables({ secrets: configured, publicKeys })) continue;
    const url = extras.urls?.[sender.name];
    const variables = variablesOf(sender);
    // A key of a kind the sender does not use would leave it enabled with nothing to verify by.
    const unused = [
      configured.length > 0 && variables.secret === undefined ? senderVariable(sender.name, 'secret') : undefined,
      publicKeys.length > 0 && variables.publicKey === undefined ? senderVariable(sender.name, 'publicKey') : undefined,
      url !== undefined && variables.url === undefined ? senderVariable(sender.name, 'url') : undefined,
    ].filter((variable) => variable !== undefined);
    if (unused.length > 0) {
      const expected = [variables.secret, variables.publicKey, variables.url].filter((name) => name !== undefined);
      throw new Error(`${sender.name}: takes ${expected.join(' and ')}, not ${unused.join(' or ')}`);
    }
    if (variables.url !== undefined && url === undefined) {
      throw new Error(`${sender.name}: signs the URL it posts to: set ${variables.url}`);
    }
    const keys = await sender.importKeys(configured, publicKeys);
    enabled.set(sender.name, { sender, keys, ...(url === undefined ? {} : { url }) });
  }
  return enabled;
}
