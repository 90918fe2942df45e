/**
 * Exit statuses of the rota CLI. Every command uses these and only these; `rota --help` lists
 * them ({@link EXIT_CODES_HELP}), and so does README.md.
 */
export const EXIT_OK = 0;
/**
 * A value was invalid: an option's or argument's value (`--tz Nowhere`, `--max-retries abc`,
 * `--priority urgent`, a malformed `--redis` URL), a spec or definition Rota refused, or an
 * operation that does not apply to what it names (cancelling a job that already ended).
 */
export const EXIT_INVALID = 1;
/** The command line itself was wrong: unknown command or option, missing argument or option value. */
export const EXIT_USAGE = 2;
/** Redis could not be reached, or refused the client, or refused a write for memory (maxmemory reached). */
export const EXIT_UNREACHABLE = 3;
/** What the command names (a job, a periodic task, a group) does not exist. */
export const EXIT_NOT_FOUND = 4;

/** The exit statuses as `rota --help` prints them. */
export const EXIT_CODES_HELP = `Exit status:
  ${EXIT_OK}  ok
  ${EXIT_INVALID}  invalid value (an option's value, a timer spec, a task definition)
  ${EXIT_USAGE}  usage error (unknown command or option, missing argument)
  ${EXIT_UNREACHABLE}  Redis unreachable, it refused the client, or it is full (maxmemory)
  ${EXIT_NOT_FOUND}  not found (no such job, periodic task or group)`;
