/** What a test run may not leave in its temporary folder (see test/global-setup.ts). */

/**
 * The entries of the run's temporary folder that tests made and did not remove: Rota's `rota-*`
 * files and folders (not another project's run folder, which that project checks).
 */
export function leftInRunTemp(entries: string[]): string[] {
  return entries.filter((name) => name.startsWith('rota-') && !name.startsWith('rota-test-run-')).sort();
}
