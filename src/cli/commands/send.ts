// `webhook-inbox send <provider> [--url URL]`: a local sender simulator for demos, load and chaos,
// for every sender. Builds deliveries (each sender's realistic sample, or a file), signs each with
// the sender's secret from the environment (for acme with none set, the development secret
// `npm start` keeps in DATA_DIR), or with `--private-key` for senders that sign with one, as that
// sender's description says, sends them with bounded concurrency to the URL (default: this machine's PORT and
// the sender's route), draws progress on a terminal and always prints a summary of answers by
// status, naming the URL. Needs no database; exit 0 once any delivery was accepted, else 1 with one
// line saying what the answers suggest (nothing listening, a secret the server does not share, …).
import { readFileSync } from 'node:fs';
import { Argument, InvalidArgumentError } from 'commander';
import type { Config } from '../../config.ts';
import {
  developmentSecretFile,
  developmentSecretUse,
  existingDevelopmentSecret,
} from '../../entry/setup/dev-secret.ts';
import { forEachBounded } from '../../lib/loops.ts';
import { type SigningKey, type SimulatedDelivery, simulatedSenders } from '../../ops/sender-setup/simulator.ts';
import { providerSecrets, senderVariable } from '../../sender-variables.ts';
import { importPrivateKey } from '../../senders/asymmetric.ts';
import { privateKeyAlgorithm, takesSecret } from '../../senders/signing.ts';
import { CliError, type CommandModule, EXIT, integerIn } from '../context.ts';

interface SendOptions {
  url?: string;
  file?: string;
  type?: string;
  count: number;
  duplicates: number;
  concurrency: number;
  privateKey?: string;
  json?: boolean;
}

function httpUrl(value: string): string {
  try {
    const url = new URL(value);
    if (url.protocol === 'http:' || url.protocol === 'https:') return url.toString();
  } catch {}
  throw new InvalidArgumentError('expected an http:// or https:// URL');
}

/** Whether fetch failed because nothing listens at the address (its cause, as undici reports it). */
function refused(error: unknown): boolean {
  const cause = error instanceof Error ? error.cause : undefined;
  return typeof cause === 'object' && cause !== null && 'code' in cause && cause.code === 'ECONNREFUSED';
}

/**
 * What one delivery was answered with: the status, `duplicate` noted apart, or a network failure
 * (`connection refused`, told apart from every other failure to get an answer).
 */
async function deliver(url: string, outgoing: SimulatedDelivery, headers: Record<string, string>): Promise<string> {
  try {
    const response = await fetch(url, { method: 'POST', body: outgoing.body, headers });
    const text = await response.text();
    return response.status === 200 && text.includes('"duplicate":true') ? '200 duplicate' : String(response.status);
  } catch (error) {
    return refused(error) ? 'connection refused' : 'no answer';
  }
}

/**
 * The secret to sign with: the provider's variable, else (acme, nothing configured, not production)
 * the development secret `npm start` made, exactly when `npm start` would have enabled it.
 */
async function signingSecret(config: Config, provider: string): Promise<string> {
  const secrets = providerSecrets(config);
  const configured = secrets[provider]?.[0];
  if (configured !== undefined) return configured;
  const variable = senderVariable(provider, 'secret');
  if (provider === 'acme' && developmentSecretUse(config).inUse) {
    const development = await existingDevelopmentSecret(config.DATA_DIR);
    if (development !== undefined) return development;
    throw new CliError(
      EXIT.couldNotRun,
      `acme: no secret: set ${variable}, or run \`npm start\` once so it writes ${developmentSecretFile(config.DATA_DIR)}`,
    );
  }
  throw new CliError(EXIT.couldNotRun, `${provider}: no secret: set ${variable} to the secret the server uses`);
}

/**
 * The key to sign with: `--private-key`'s for a sender that signs with one (the server holding its
 * public half), else the secret. A sender that signs only with a private key cannot be signed for
 * without one: the CLI never holds a sender's key otherwise.
 */
async function signingKey(config: Config, provider: string, privateKeyFile: string | undefined): Promise<SigningKey> {
  const description = simulatedSenders[provider]?.description;
  const algorithm = description === undefined ? undefined : privateKeyAlgorithm(description);
  const publicKeyVariable = senderVariable(provider, 'publicKey');
  if (privateKeyFile !== undefined) {
    if (algorithm === undefined) {
      throw new CliError(EXIT.usage, `${provider} signs with a shared secret, not a private key: drop --private-key`);
    }
    try {
      return { privateKey: await importPrivateKey(readFileSync(privateKeyFile, 'utf8'), algorithm) };
    } catch (error) {
      throw new CliError(EXIT.couldNotRun, `cannot use ${privateKeyFile}: ${(error as Error).message}`);
    }
  }
  if (description !== undefined && !takesSecret(description)) {
    throw new CliError(
      EXIT.couldNotRun,
      `${provider} signs with a private key only the sender holds: pass --private-key <file>, a PEM ${algorithm} ` +
        `private key whose public half the server has in ${publicKeyVariable} (docs/operations.md#sending-test-events)`,
    );
  }
  return { secret: await signingSecret(config, provider) };
}

/** How the deliveries were signed, for the hint a 401 gets. */
export interface SignedWith {
  privateKey: boolean;
  /** The URL signed, for senders that sign it. */
  signedUrl?: string;
}

/** What a 401 most likely means for the way the deliveries were signed. */
function refusedSignatures(url: string, provider: string, signed: SignedWith): string {
  const key = signed.privateKey
    ? `the server's ${senderVariable(provider, 'publicKey')} is not the public half of --private-key`
    : `the secret here (${senderVariable(provider, 'secret')}) is not the server's`;
  const signedUrl =
    signed.signedUrl === undefined
      ? ''
      : `, the URL signed (${signed.signedUrl}, from ${senderVariable(provider, 'url')} or --url) is not its ` +
        senderVariable(provider, 'url');
  return `${url} refused the signatures (401): ${key}${signedUrl}, or the two clocks differ`;
}

/**
 * Why no delivery was accepted, from the most common answer: the one line an operator needs to fix
 * the next attempt (the URL, the variable whose secret the server does not share).
 */
export function nothingAccepted(
  url: string,
  provider: string,
  answers: ReadonlyMap<string, number>,
  signed: SignedWith = { privateKey: false },
): string {
  const [common] = [...answers].sort(([, a], [, b]) => b - a)[0] ?? ['no answer'];
  switch (common) {
    case 'connection refused':
      return `connection refused at ${url}: nothing listens there; is the service running? (npm start, or --url)`;
    case 'no answer':
      return `nothing answered at ${url}: is the service running there, and is the host name right? (--url)`;
    case '401':
      return refusedSignatures(url, provider, signed);
    case '404':
      return `${url} answered 404: no enabled sender ${provider} there (its secret is not set on the server), or a wrong URL`;
    case '503':
      return `${url} answered 503: the sender is paused there or the service cannot store right now; try again later`;
    default:
      return `${url} accepted none of the deliveries (most answered ${common})`;
  }
}

export const sendCommand: CommandModule = {
  path: ['send'],
  define: (command, run) =>
    command
      .description(
        "sign events with the provider's secret (its variable, or the development secret `npm start` made) " +
          'and deliver them',
      )
      .addArgument(new Argument('<provider>', 'the sender to sign as').choices(Object.keys(simulatedSenders)))
      .option('--url <url>', 'where to deliver (default: http://127.0.0.1:$PORT/webhooks/<provider>)', httpUrl)
      .option('--file <path>', 'send this JSON body as it is (instead of generated events)')
      .option('--type <type>', "event type of the generated events (default: the sender's usual one)")
      .option('--count <n>', 'distinct events (with --file: deliveries of the one file)', integerIn(1, 1_000_000), 1)
      .option('--duplicates <k>', 'deliver each event k more times (same id, fresh signature)', integerIn(0, 1000), 0)
      .option('--concurrency <c>', 'deliveries in flight at once', integerIn(1, 1000), 4)
      .option(
        '--private-key <file>',
        'sign with this PEM private key (PKCS#8), for senders that sign with one (discord, sendgrid, telnyx; ' +
          "standard's v1a): the server holds its public half",
      )
      .option('--json', 'print the summary as one JSON document')
      .action(
        run.offline(async (context, provider: string, options: SendOptions) => {
          if (options.file !== undefined && options.type !== undefined) {
            throw new CliError(EXIT.usage, '--file and --type exclude each other');
          }
          const sender = simulatedSenders[provider];
          if (sender === undefined) throw new CliError(EXIT.usage, `unknown provider: ${provider}`);
          const key = await signingKey(context.config, provider, options.privateKey);
          const url = options.url ?? `http://127.0.0.1:${context.config.PORT}/webhooks/${provider}`;
          // What the server checks a signed URL against is its configured public URL, else this one.
          const signsUrl = sender.description.signed?.includes('{url}') === true;
          const target = { url: context.config.senderSettings[provider]?.url ?? url };
          const nowSeconds = () => Math.floor(context.clock() / 1000);
          let fileBody: string | undefined;
          try {
            fileBody = options.file === undefined ? undefined : readFileSync(options.file, 'utf8');
            if (fileBody !== undefined) sender.fromFile(fileBody, nowSeconds());
          } catch (error) {
            throw new CliError(EXIT.couldNotRun, `cannot use ${options.file}: ${(error as Error).message}`);
          }

          const deliveries = Array.from({ length: options.count }, () =>
            fileBody === undefined
              ? sender.newDelivery(options.type, nowSeconds())
              : sender.fromFile(fileBody, nowSeconds()),
          );
          const events = deliveries.reduce((sum, delivery) => sum + delivery.events, 0);
          const queue = deliveries.flatMap((delivery) =>
            Array.from({ length: 1 + options.duplicates }, () => delivery),
          );
          const total = queue.length;
          const answers = new Map<string, number>();
          let done = 0;
          const draw = () => {
            if (!context.errIsTerminal) return;
            const width = 30;
            const filled = Math.round((done / total) * width);
            process.stderr.write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total}`);
          };
          const started = context.clock();
          await forEachBounded(queue, options.concurrency, async (outgoing) => {
            const answer = await deliver(url, outgoing, await sender.sign(outgoing, key, nowSeconds(), target));
            answers.set(answer, (answers.get(answer) ?? 0) + 1);
            done += 1;
            draw();
          });
          if (context.errIsTerminal) process.stderr.write('\n');

          const byAnswer = Object.fromEntries([...answers].sort(([a], [b]) => a.localeCompare(b)));
          const elapsedMs = context.clock() - started;
          context.out(
            options.json
              ? JSON.stringify({
                  provider,
                  url,
                  events,
                  deliveries: total,
                  answers: byAnswer,
                  elapsed_ms: elapsedMs,
                })
              : `sent ${total} deliveries of ${events} event(s) to ${url} in ${elapsedMs} ms: ` +
                  Object.entries(byAnswer)
                    .map(([answer, count]) => `${answer} x${count}`)
                    .join(', '),
          );
          const accepted = [...answers].some(([answer]) => answer.startsWith('2'));
          if (!accepted) {
            const signed = { privateKey: 'privateKey' in key, ...(signsUrl ? { signedUrl: target.url } : {}) };
            throw new CliError(EXIT.couldNotRun, nothingAccepted(url, provider, answers, signed));
          }
          return EXIT.done;
        }),
      ),
};
