// Structured logging: one JSON object per line on stdout, levels filtered by LOG_LEVEL. Written on
// console.log so the same code runs on Node and in workerd; callers pass facts, never payloads.
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, string | number | boolean | null | undefined | readonly string[]>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

const rank: Record<LogLevel | 'silent', number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };

export function createLogger(options: {
  level: LogLevel | 'silent';
  now: () => Date;
  write?: (line: string) => void;
}): Logger {
  const threshold = rank[options.level];
  const write = options.write ?? ((line: string) => console.log(line));
  const emit = (level: LogLevel) => (message: string, fields?: LogFields) => {
    if (rank[level] < threshold) return;
    write(JSON.stringify({ time: options.now().toISOString(), level, msg: message, ...fields }));
  };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}
