// The relay's HTTP transport on Node: undici's request API, the dispatcher under Node's own fetch,
// without the WHATWG stream and AbortSignal plumbing fetch adds per call (a third of the CPU per
// message, which decides the relay's throughput). Behaves as fetchPost does: POST, no redirect
// followed (a 3xx comes back as it is), the signal aborts the call, the body is read and dropped, a
// failed answer's first bytes kept to say what the target said. Node only; the Workers entry keeps
// fetchPost.
import { request } from 'undici';
import {
  answerExcerpt,
  type HttpPost,
  isFailureStatus,
  MAX_DISCARDED_BODY_BYTES,
  readAnswer,
} from './publishers/publisher.ts';

export const undiciPost: HttpPost = async (url, { headers, body, signal }) => {
  const answer = await request(url, { method: 'POST', headers, body, signal });
  let said: string | undefined;
  if (isFailureStatus(answer.statusCode)) {
    const chunks = answer.body[Symbol.asyncIterator]();
    // Past the limit the socket is destroyed rather than a huge body read, as dump() does.
    const bytes = await readAnswer(
      () => chunks.next(),
      async () => answer.body.destroy(),
      true,
    );
    said = answerExcerpt(bytes);
  } else {
    // dump() reads up to the limit and then destroys the socket rather than read a huge body.
    await answer.body.dump({ limit: MAX_DISCARDED_BODY_BYTES }).catch(() => {});
  }
  return {
    status: answer.statusCode,
    header: (name) => {
      const value = answer.headers[name.toLowerCase()];
      return (Array.isArray(value) ? value[0] : value) ?? null;
    },
    said,
  };
};
