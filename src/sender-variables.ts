// The contract's naming rule for sender variables (`<NAME>_WEBHOOK_SECRET`, `_PUBLIC_KEY`, `_URL`,
// Slack's secret aside), both ways, and what the configuration holds for each sender. It knows no
// sender's name (the sender registry decides which names are senders) and imports nothing of
// src/, so that config.ts, which parses these variables, and every layer above may read it.

/** What a sender variable holds: HMAC secrets or shared tokens, public keys, or the signed public URL. */
export type CredentialKind = 'secret' | 'publicKey' | 'url';

/** One sender's configuration: what its `_WEBHOOK_SECRET`, `_PUBLIC_KEY` and `_URL` hold. */
export interface SenderSettings {
  secrets: readonly string[];
  publicKeys: readonly string[];
  url?: string;
}

/** By sender name, every sender with at least one variable set (known to the registry or not). */
export type SettingsBySender = Readonly<Record<string, SenderSettings>>;

/** Secrets, or public keys, as configured (text), by sender name: what the sender registry imports. */
export type KeysBySender = Readonly<Record<string, readonly string[]>>;

const SUFFIX: Readonly<Record<CredentialKind, string>> = { secret: 'SECRET', publicKey: 'PUBLIC_KEY', url: 'URL' };

/** Slack's secret keeps the name Slack's own documentation gives it. */
const EXCEPTIONS: Readonly<Record<string, string>> = { 'slack secret': 'SLACK_SIGNING_SECRET' };

/** The variable that configures `kind` for `sender`. */
export function senderVariable(sender: string, kind: CredentialKind): string {
  return EXCEPTIONS[`${sender} ${kind}`] ?? `${sender.toUpperCase()}_WEBHOOK_${SUFFIX[kind]}`;
}

const SENDER_VARIABLE = /^([A-Z0-9]+)_WEBHOOK_(SECRET|PUBLIC_KEY|URL)$/;
const KIND_OF_SUFFIX: Readonly<Record<string, CredentialKind>> = {
  SECRET: 'secret',
  PUBLIC_KEY: 'publicKey',
  URL: 'url',
};

/** The sender and kind a variable configures by the naming rule, if it is one. */
export function senderVariableOf(variable: string): { sender: string; kind: CredentialKind } | undefined {
  if (variable === 'SLACK_SIGNING_SECRET') return { sender: 'slack', kind: 'secret' };
  const match = SENDER_VARIABLE.exec(variable);
  const sender = match?.[1]?.toLowerCase();
  const kind = KIND_OF_SUFFIX[match?.[2] ?? ''];
  // A name the rule gives to another variable (`SLACK_WEBHOOK_SECRET`) configures nothing.
  if (sender === undefined || kind === undefined || senderVariable(sender, kind) !== variable) return undefined;
  return { sender, kind };
}

/**
 * Variables that may come from a `_FILE` as lists, one a line: secrets (a name the rule gives to
 * another variable too, so that its file is read and its strength checked) and public keys. Public
 * keys are no secret, but they are mounted the same way.
 */
const SECRET_LIST_VARIABLE = /^(?:[A-Z0-9]+_WEBHOOK_SECRET|SLACK_SIGNING_SECRET)$/;
const PUBLIC_KEY_LIST_VARIABLE = /^[A-Z0-9]+_WEBHOOK_PUBLIC_KEY$/;

export const isSecretListVariable = (variable: string): boolean => SECRET_LIST_VARIABLE.test(variable);
export const isPublicKeyListVariable = (variable: string): boolean => PUBLIC_KEY_LIST_VARIABLE.test(variable);

/** What the helpers below read: the configuration's sender settings. */
interface Configured {
  senderSettings: SettingsBySender;
}

/** Each sender's secrets by its `provider` column name (the contract's provider table). */
export function senderSecrets(config: Configured): KeysBySender {
  return Object.fromEntries(Object.entries(config.senderSettings).map(([name, settings]) => [name, settings.secrets]));
}

/** What enableSenders takes beside the secrets: public keys and signed URLs, by sender name. */
export interface SenderExtras {
  /** For senders that sign with a private key. */
  publicKeys?: KeysBySender;
  urls?: Readonly<Record<string, string>>;
}

export function senderExtras(config: Configured): SenderExtras {
  const entries = Object.entries(config.senderSettings);
  return {
    publicKeys: Object.fromEntries(entries.map(([name, settings]) => [name, settings.publicKeys])),
    urls: Object.fromEntries(
      entries.flatMap(([name, settings]) => (settings.url === undefined ? [] : [[name, settings.url]])),
    ),
  };
}

/**
 * The variables that enable a sender (secrets and public keys; a URL alone enables nothing), by
 * name and sorted (the environment's order is no order).
 */
export function enablingVariables(settings: SettingsBySender): string[] {
  return Object.entries(settings)
    .flatMap(([name, sender]) => [
      ...(sender.secrets.length > 0 ? [senderVariable(name, 'secret')] : []),
      ...(sender.publicKeys.length > 0 ? [senderVariable(name, 'publicKey')] : []),
    ])
    .sort();
}
