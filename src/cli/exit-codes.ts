/** Exit statuses of the rota CLI. */
export const EXIT_OK = 0;
/** Some input (a spec, a definition) was invalid. */
export const EXIT_INVALID = 1;
/** The command line itself was wrong: unknown option, bad option value, missing argument. */
export const EXIT_USAGE = 2;
