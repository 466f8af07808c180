// Development convenience: with no sender configured (and not in production), an `acme` secret is
// made once, kept in DATA_DIR, and announced with a signed curl that works as printed. `npm start`,
// `npm run db:start` and the CLI's `send` all decide by developmentSecretUse.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../../config.ts';
import { simulatedSenders } from '../../ops/sender-setup/simulator.ts';
import { configuredSenders } from '../../senders/registry.ts';

/** The file under DATA_DIR that holds the development secret. */
export const developmentSecretFile = (dataDir: string): string => join(dataDir, 'acme-development-secret');

/** The development secret if `npm start` made one already (the CLI's `send` reads it, never makes it). */
export async function existingDevelopmentSecret(dataDir: string): Promise<string | undefined> {
  const file = developmentSecretFile(dataDir);
  return existsSync(file) ? (await readFile(file, 'utf8')).trim() : undefined;
}

/**
 * Whether `npm start` enables acme with the development secret, and why (or why not), as start-up
 * reports it: never in production, else only while no sender is configured (a secret or public key of
 * a sender set turns it off, and acme without its own secret answers 404 like any sender; a variable
 * naming no sender configures nothing, so it does not).
 */
export type DevelopmentSecretUse =
  | { inUse: true; reason: 'no sender secret or public key is set and NODE_ENV is not production' }
  | { inUse: false; reason: 'NODE_ENV is production' }
  | { inUse: false; reason: 'a sender secret or public key is set'; variables: readonly string[] };

export function developmentSecretUse(config: Pick<Config, 'NODE_ENV' | 'senderSettings'>): DevelopmentSecretUse {
  if (config.NODE_ENV === 'production') return { inUse: false, reason: 'NODE_ENV is production' };
  const variables = configuredSenders(config.senderSettings).enablingVariables;
  return variables.length > 0
    ? { inUse: false, reason: 'a sender secret or public key is set', variables }
    : { inUse: true, reason: 'no sender secret or public key is set and NODE_ENV is not production' };
}

export async function developmentSecret(dataDir: string): Promise<string> {
  const existing = await existingDevelopmentSecret(dataDir);
  if (existing !== undefined) return existing;
  const file = developmentSecretFile(dataDir);
  await mkdir(dataDir, { recursive: true, mode: 0o755 });
  const secret = randomBytes(32).toString('hex');
  await writeFile(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}

/** A ready-to-paste `curl` delivering one signed acme event; valid while its timestamp is fresh. */
export async function signedCurlExample(options: { port: number; secret: string; nowMs: number }): Promise<string> {
  const nowSeconds = Math.floor(options.nowMs / 1000);
  const acme = simulatedSenders.acme;
  if (acme === undefined) throw new Error('no acme simulator');
  const outgoing = acme.newDelivery('subscription.updated', nowSeconds);
  const headers = await acme.sign(outgoing, { secret: options.secret }, nowSeconds);
  return [
    `curl -sS -X POST http://127.0.0.1:${options.port}/webhooks/acme`,
    ...Object.entries(headers).map(([name, value]) => `-H '${name}: ${value}'`),
    `--data-binary '${outgoing.body}'`,
  ].join(' ');
}
