// Task handlers for `rota worker --tasks examples/tasks.js`: the default export maps task names
// to async functions that receive the job context (args, job, signal, log, progress).
export default {
  async send({ args, log }) {
    log('sending to', args?.to);
    return { sent: true };
  },
  async report({ log, signal }) {
    for (let i = 1; i <= 5 && !signal.aborted; i++) {
      await new Promise((r) => setTimeout(r, 100));
      log(`step ${i}/5`);
    }
    return 'report built';
  },
  async cleanup({ log }) {
    log('removed stale files');
  },
};
