import { RotaError } from '../errors.js';

/**
 * Thrown by {@link parseTimer} (and the kind-specific parsers) when a timer
 * specification cannot be parsed. The message names the offending part and
 * its position (0-based character offset into `spec`).
 */
export class TimerSyntaxError extends RotaError {
  /** The specification that was rejected, as given. */
  readonly spec: string;
  /** 0-based offset of the offending part in `spec`. */
  readonly position: number;
  /** Which part was rejected, e.g. `"minute"`, `"weekday"`, `"timezone"`, `"duration"`. */
  readonly part: string;

  constructor(spec: string, position: number, part: string, reason: string) {
    super(`Invalid timer ${JSON.stringify(spec)}: ${part} at position ${position}: ${reason}`);
    this.spec = spec;
    this.position = position;
    this.part = part;
  }
}
