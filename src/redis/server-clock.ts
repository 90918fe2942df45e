/**
 * The Redis server's clock as seen from this process: every script that answers the server's time
 * is timed on this process's monotonic clock (performance.now()), which wall-clock steps do not
 * move. The server's time between answers is estimated from the last one, and an answer outside
 * what the monotonic clock allows for (past the call's round trip, by more than a threshold) is a
 * jump of the server's clock (NTP stepping it, an operator setting it, a VM restored). Executors
 * and schedulers each keep one per server they call; see docs/operations.md, Time.
 */

/** A step of the server's clock: how far it moved (ms; positive forward), and its time after it. */
export interface ClockJump {
  jumpMs: number;
  serverNow: number;
}

/** What a script is told to expect of the server's clock, to notice a jump in the same atomic call. */
export interface ClockExpectation {
  /** The server's time when the call was sent, as estimated here (ms). */
  at: number;
  /** How far the server's time may differ from `at` before the script treats it as a jump (ms). */
  toleranceMs: number;
}

/** Smallest gap against the monotonic clock reported as a jump (ms): NTP's slews and a loaded host stay far below it. */
export const CLOCK_JUMP_MS = 1000;

export class ServerClock {
  /** Server time less monotonic time (ms), from the last answer; null before the first. */
  private offset: number | null = null;
  /** Half the round trip of that answer: how far off the offset may be (ms). */
  private error = 0;

  /**
   * @param onJump told of every jump, once.
   * @param mono the monotonic clock (ms); a test injects one.
   */
  constructor(
    private readonly onJump: (jump: ClockJump) => void = () => {},
    private readonly mono: () => number = () => performance.now(),
  ) {}

  /** Whether an answer has been seen (before it, {@link now} is this host's wall clock). */
  get known(): boolean {
    return this.offset !== null;
  }

  /** The server's time now, as estimated here (ms). */
  now(): number {
    return this.offset === null ? Date.now() : Math.round(this.mono() + this.offset);
  }

  /** What to tell a script sent now, with `toleranceMs` of slack; null before the first answer. */
  expect(toleranceMs: number): ClockExpectation | null {
    return this.offset === null ? null : { at: this.now(), toleranceMs: Math.max(CLOCK_JUMP_MS, toleranceMs) };
  }

  /**
   * Records the server's time `serverMs` answered by a call sent at `sentAt` and answered at
   * `gotAt` (monotonic ms). Answers the jump it shows (ms, positive forward), or 0.
   */
  observe(serverMs: number, sentAt: number, gotAt: number): number {
    let jump = 0;
    if (this.offset !== null) {
      // The server read its clock between the send and the answer, as far as the last offset tells.
      const ahead = serverMs - (gotAt + this.offset);
      const behind = sentAt + this.offset - serverMs;
      const slack = CLOCK_JUMP_MS + this.error;
      if (ahead > slack) jump = Math.round(ahead);
      else if (behind > slack) jump = -Math.round(behind);
    }
    this.offset = serverMs - (sentAt + gotAt) / 2;
    this.error = (gotAt - sentAt) / 2;
    if (jump !== 0) this.onJump({ jumpMs: jump, serverNow: serverMs });
    return jump;
  }

  /**
   * Sends `call` with what it should expect of the server's clock (see {@link expect}), and
   * observes the server time its answer carries.
   */
  async timed<T extends { serverNow: number }>(
    toleranceMs: number,
    call: (expect: ClockExpectation | null) => Promise<T>,
  ): Promise<T> {
    const sentAt = this.mono();
    const reply = await call(this.expect(toleranceMs));
    this.observe(reply.serverNow, sentAt, this.mono());
    return reply;
  }
}
