/**
 * Which shard an executor takes from next. It takes from the shards in turn, and passes over a
 * shard its last take found dry (short of what it asked) until that shard's wake-up marker fires,
 * its next due time passes, or the executor wakes from a sleep on all of them. A take sent before
 * a shard's wake-up cannot mark it dry after it (its ticket is older).
 */

/** What an executor knows of one shard between takes. */
interface ShardTurn {
  dry: boolean;
  /** Next due time in the shard's `delayed` set when it went dry (wall-clock ms; 0 or less: none). */
  nextDue: number;
  /** Counts the shard's wake-ups: the ticket of a take sent to it. */
  wakeUps: number;
  /** Takes sent to the shard and not answered yet. */
  inFlight: number;
}

export class ShardTurns {
  private readonly turns: ShardTurn[];
  /** The shard the next take goes to, unless it is dry. */
  private cursor = 0;
  private dryCount = 0;

  constructor(
    count: number,
    private readonly wall: () => number = Date.now,
  ) {
    this.turns = Array.from({ length: count }, () => ({ dry: false, nextDue: -1, wakeUps: 0, inFlight: 0 }));
  }

  /** Number of shards. */
  get count(): number {
    return this.turns.length;
  }

  /**
   * The shard the next take goes to: the next in turn that is not dry and has no take in flight,
   * else the next that is not dry (a shard whose primary fails over holds its take: the others
   * go on), else any.
   */
  next(): number {
    this.wakeDue();
    const n = this.turns.length;
    let busy = -1;
    for (let k = 0; k < n; k++) {
      const i = (this.cursor + k) % n;
      const t = this.turns[i];
      if (t.dry) continue;
      if (t.inFlight === 0) return this.pick(i);
      if (busy < 0) busy = i;
    }
    return this.pick(busy >= 0 ? busy : this.cursor);
  }

  private pick(i: number): number {
    this.cursor = (i + 1) % this.turns.length;
    return i;
  }

  /** A take was sent to shard `i`. */
  sent(i: number): void {
    this.turns[i].inFlight++;
  }

  /** A take sent to shard `i` was answered, or failed. */
  settled(i: number): void {
    this.turns[i].inFlight--;
  }

  /** The ticket of a take sent to shard `i` now. */
  ticket(i: number): number {
    return this.turns[i].wakeUps;
  }

  /**
   * A take of `n` jobs sent to shard `i` with `ticket` brought `got`; the shard's next due time
   * is `due`. Answers whether every shard is dry now.
   */
  answered(i: number, n: number, got: number, due: number, ticket: number): boolean {
    const t = this.turns[i];
    if (got < n && ticket === t.wakeUps) {
      if (!t.dry) this.dryCount++;
      t.dry = true;
      t.nextDue = due;
    } else if (got === n) this.wake(i);
    return this.allDry;
  }

  /** Whether every shard is dry. */
  get allDry(): boolean {
    return this.dryCount === this.turns.length;
  }

  /** Whether shard `i` is dry. */
  isDry(i: number): boolean {
    return this.turns[i].dry;
  }

  /**
   * Shard `i` has work again (its marker fired, or a take found it full). `first`: a dry shard
   * whose marker fired has the next turn, as a group new to a shard has the next turn there.
   */
  wake(i: number, first = false): void {
    const t = this.turns[i];
    t.wakeUps++;
    if (t.dry) {
      this.dryCount--;
      if (first) this.cursor = i;
    }
    t.dry = false;
  }

  /** Every shard may have work again (the executor woke from a sleep on all of them). */
  wakeAll(): void {
    for (let i = 0; i < this.turns.length; i++) this.wake(i);
  }

  /** The earliest next due time of the dry shards (wall-clock ms; -1: none). */
  nextDue(): number {
    let due = -1;
    for (const t of this.turns) if (t.dry && t.nextDue > 0 && (due < 0 || t.nextDue < due)) due = t.nextDue;
    return due;
  }

  /** Wakes the dry shards whose due time has come. */
  private wakeDue(): void {
    if (this.dryCount === 0) return;
    const now = this.wall();
    this.turns.forEach((t, i) => {
      if (t.dry && t.nextDue > 0 && t.nextDue <= now) this.wake(i);
    });
  }
}
