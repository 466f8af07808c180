// An HTTP target for relay benchmarks, in a child process of its own so its CPU is not counted as
// the relay's: node:http on 127.0.0.1 answering 200 `{}` at once with keep-alive, counting requests.
import { type ChildProcess, spawn } from 'node:child_process';

const SINK_SOURCE = `
const http = require('node:http');
let received = 0;
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    received += 1;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '2' });
    res.end('{}');
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
process.on('message', () => process.send({ received }));
process.on('disconnect', () => process.exit(0));
`;

export interface SinkProcess {
  url: string;
  pid: number;
  /** Requests received so far. */
  received(): Promise<number>;
  stop(): Promise<void>;
}

function nextMessage(child: ChildProcess): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    child.once('message', (message) => resolve(message as Record<string, number>));
    child.once('exit', (code) => reject(new Error(`the sink exited (code ${code})`)));
  });
}

export async function startSinkProcess(): Promise<SinkProcess> {
  const child = spawn(process.execPath, ['-e', SINK_SOURCE], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const { port } = await nextMessage(child);
  if (child.pid === undefined || port === undefined) throw new Error('the sink did not start');
  return {
    url: `http://127.0.0.1:${port}/outbox`,
    pid: child.pid,
    received: async () => {
      const answer = nextMessage(child);
      child.send('count');
      return (await answer).received ?? 0;
    },
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.disconnect();
      await exited;
    },
  };
}
