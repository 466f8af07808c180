// `webhook-inbox send <provider> [--url URL]`: a local provider simulator for demos, load and chaos.
// Builds events (or takes a file), signs each delivery with the provider's secret from the
// environment (for acme with none set, the development secret `npm start` keeps in DATA_DIR) in that
// provider's scheme, sends them with bounded concurrency to the URL (default: this machine's PORT and
// the provider's route), draws progress on a terminal and always prints a summary of answers by
// status, naming the URL. Needs no database; exit 0 once any delivery was accepted, else 1 with one
// line saying what the answers suggest (nothing listening, a secret the server does not share, …).
import { readFileSync } from 'node:fs';
import { Argument, InvalidArgumentError } from 'commander';
import type { Config } from '../../config.ts';
import { developmentSecretFile, developmentSecretUse, existingDevelopmentSecret } from '../../entry/dev-secret.ts';
import { forEachBounded } from '../../lib/loops.ts';
import { type Outgoing, simulatedSchemes } from '../../ops/simulator.ts';
import { providerSecrets, senderVariable } from '../../sender-variables.ts';
import { CliError, type CommandModule, EXIT, integerIn } from '../context.ts';

interface SendOptions {
  url?: string;
  file?: string;
  type?: string;
  count: number;
  duplicates: number;
  concurrency: number;
  json?: boolean;
}

function httpUrl(value: string): string {
  try {
    const url = new URL(value);
    if (url.protocol === 'http:' || url.protocol === 'https:') return url.toString();
  } catch {}
  throw new InvalidArgumentError('expected an http:// or https:// URL');
}

/** What one delivery was answered with: the status, `duplicate` noted apart, or a network failure. */
async function deliver(url: string, outgoing: Outgoing, headers: Record<string, string>): Promise<string> {
  try {
    const response = await fetch(url, { method: 'POST', body: outgoing.body, headers });
    const text = await response.text();
    return response.status === 200 && text.includes('"duplicate":true') ? '200 duplicate' : String(response.status);
  } catch {
    return 'no answer';
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
 * Why no delivery was accepted, from the most common answer: the one line an operator needs to fix
 * the next attempt (the URL, the variable whose secret the server does not share).
 */
export function nothingAccepted(url: string, provider: string, answers: ReadonlyMap<string, number>): string {
  const [common] = [...answers].sort(([, a], [, b]) => b - a)[0] ?? ['no answer'];
  switch (common) {
    case 'no answer':
      return `nothing answered at ${url}: is the service running there? (npm start, or --url)`;
    case '401':
      return (
        `${url} refused the signatures (401): the secret here (${senderVariable(provider, 'secret')}) is not ` +
        "the server's, or the two clocks differ"
      );
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
      .summary('sign test events and deliver them')
      .description(
        "sign events with the provider's secret (its variable, or the development secret `npm start` made) " +
          'and deliver them',
      )
      .addArgument(new Argument('<provider>', 'the scheme to sign with').choices(Object.keys(simulatedSchemes)))
      .option('--url <url>', 'where to deliver (default: http://127.0.0.1:$PORT/webhooks/<provider>)', httpUrl)
      .option('--file <path>', 'send this JSON body as it is (instead of generated events)')
      .option('--type <type>', 'event type of the generated events (acme: subscription.updated)')
      .option('--count <n>', 'distinct events (with --file: deliveries of the one file)', integerIn(1, 1_000_000), 1)
      .option('--duplicates <k>', 'deliver each event k more times (same id, fresh signature)', integerIn(0, 1000), 0)
      .option('--concurrency <c>', 'deliveries in flight at once', integerIn(1, 1000), 4)
      .option('--json', 'print the summary as one JSON document')
      .action(
        run.offline(async (context, provider: string, options: SendOptions) => {
          if (options.file !== undefined && options.type !== undefined) {
            throw new CliError(EXIT.usage, '--file and --type exclude each other');
          }
          const scheme = simulatedSchemes[provider];
          if (scheme === undefined) throw new CliError(EXIT.usage, `unknown provider: ${provider}`);
          const secret = await signingSecret(context.config, provider);
          const url = options.url ?? `http://127.0.0.1:${context.config.PORT}/webhooks/${provider}`;
          let fileBody: string | undefined;
          try {
            fileBody = options.file === undefined ? undefined : readFileSync(options.file, 'utf8');
            if (fileBody !== undefined) scheme.fromFile(fileBody);
          } catch (error) {
            throw new CliError(EXIT.couldNotRun, `cannot use ${options.file}: ${(error as Error).message}`);
          }

          const nowSeconds = () => Math.floor(context.clock() / 1000);
          const events = Array.from({ length: options.count }, () =>
            fileBody === undefined ? scheme.newEvent(options.type, nowSeconds()) : scheme.fromFile(fileBody),
          );
          const queue = events.flatMap((event) => Array.from({ length: 1 + options.duplicates }, () => event));
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
            const answer = await deliver(url, outgoing, await scheme.sign(outgoing, secret, nowSeconds()));
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
                  events: events.length,
                  deliveries: total,
                  answers: byAnswer,
                  elapsed_ms: elapsedMs,
                })
              : `sent ${total} deliveries of ${events.length} event(s) to ${url} in ${elapsedMs} ms: ` +
                  Object.entries(byAnswer)
                    .map(([answer, count]) => `${answer} x${count}`)
                    .join(', '),
          );
          const accepted = [...answers].some(([answer]) => answer.startsWith('2'));
          if (!accepted) throw new CliError(EXIT.couldNotRun, nothingAccepted(url, provider, answers));
          return EXIT.done;
        }),
      ),
};
