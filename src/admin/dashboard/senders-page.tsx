// The senders an operator can pause: the overview's "Paused senders" panel (who, since, until, why,
// and Resume), and the senders page (/admin/senders: every enabled sender with its state, how it
// comes back with what a pause refused, and Pause or Resume). The forms post to the admin API
// through the page's script, Pause after a confirmation. Pure rendering: the routes read the pauses.
import type { FC } from 'hono/jsx';
import { PAUSE_NOTE_MAX, retryBehaviour, type SenderPause, type SenderState } from '../../ops/pauses/sender-pauses.ts';
import { iso, Status } from './rows.tsx';

/** The lengths offered for a pause, in minutes; empty: until someone resumes it. */
const PAUSE_LENGTHS: ReadonlyArray<readonly [string, string]> = [
  ['15', '15 minutes'],
  ['30', '30 minutes'],
  ['60', '1 hour'],
  ['120', '2 hours'],
  ['240', '4 hours'],
  ['480', '8 hours'],
  ['1440', '1 day'],
  ['', 'until resumed'],
];

const senderApi = (provider: string, verb: 'pause' | 'resume') =>
  `/admin/api/senders/${encodeURIComponent(provider)}/${verb}`;

const ResumeForm: FC<{ provider: string }> = ({ provider }) => (
  <form method="post" data-action={senderApi(provider, 'resume')} data-target={provider} data-kind="resume">
    <button type="submit">Resume {provider}</button>
  </form>
);

const PauseForm: FC<{ provider: string }> = ({ provider }) => (
  <form
    method="post"
    class="pause-form"
    data-action={senderApi(provider, 'pause')}
    data-target={provider}
    data-kind="pause"
    data-confirm={`Pause ${provider}? Its deliveries will be refused with 503 until the pause ends or someone resumes it.`}
  >
    <label>
      For{' '}
      <select name="minutes" data-number="">
        {PAUSE_LENGTHS.map(([minutes, label]) => (
          <option value={minutes} selected={minutes === '60'}>
            {label}
          </option>
        ))}
      </select>
    </label>
    <label>
      Note <input name="note" maxlength={PAUSE_NOTE_MAX} placeholder="why (optional)" />
    </label>
    <button type="submit">Pause {provider}</button>
  </form>
);

/** Who paused it, since when, until when and why. */
const PauseFacts: FC<{ pause: SenderPause }> = ({ pause }) => (
  <p class="pause-facts">
    paused by <strong>{pause.pausedBy}</strong> since {iso(pause.pausedAt)} UTC,{' '}
    {pause.until === null ? 'until someone resumes it' : `until ${iso(pause.until)} UTC`}
    {pause.note === null ? null : (
      <>
        : <q>{pause.note}</q>
      </>
    )}
  </p>
);

/** On the overview, above everything else while any sender is paused; nothing when none is. */
export const PausedSenders: FC<{ paused: readonly SenderPause[] }> = ({ paused }) =>
  paused.length === 0 ? null : (
    <section class="paused" aria-label="paused senders" id="paused-senders">
      <h2>
        Paused senders: {paused.length} (<a href="/admin/senders">all senders</a>)
      </h2>
      {paused.map((pause) => (
        <div class="sender" data-sender={pause.provider}>
          <strong class="name">{pause.provider}</strong> <Status status="paused" />
          <PauseFacts pause={pause} />
          <ResumeForm provider={pause.provider} />
        </div>
      ))}
      <p class="note">
        Their deliveries are refused with 503 and Retry-After, and nothing is stored: each sender retries them and they
        are applied after the resume.
      </p>
    </section>
  );

export const SendersPage: FC<{ senders: readonly SenderState[] }> = ({ senders }) => (
  <>
    <h1 tabindex={-1}>Senders</h1>
    <p class="note">
      A paused sender's deliveries are refused with 503 and Retry-After before they are read: nothing is verified or
      stored, the sender retries them, and they are applied after the resume (or the pause's end). Every pause and
      resume is recorded with the operator's name.
    </p>
    {senders.length === 0 ? (
      <p class="empty">No sender is enabled.</p>
    ) : (
      <div class="senders">
        {senders.map(({ provider, status, pause }) => (
          <div class={status === 'paused' ? 'sender paused' : 'sender'} data-sender={provider}>
            <strong class="name">{provider}</strong> <Status status={status} />
            <p class="note">{retryBehaviour(provider)}</p>
            {pause === null ? (
              <PauseForm provider={provider} />
            ) : (
              <>
                <PauseFacts pause={pause} />
                <ResumeForm provider={provider} />
              </>
            )}
          </div>
        ))}
      </div>
    )}
  </>
);
