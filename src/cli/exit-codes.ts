/** Exit statuses of the rota CLI. */
export const EXIT_OK = 0;
/** Some input (a spec, a definition) was invalid. */
export const EXIT_INVALID = 1;
/** The command line itself was wrong: unknown option, bad option value, missing argument. */
export const EXIT_USAGE = 2;
/** Redis could not be reached. */
export const EXIT_UNREACHABLE = 3;
/** What the command names (a job, a periodic task) does not exist. */
export const EXIT_NOT_FOUND = 4;
