// The executors' task handlers, mounted at /app/tasks/tasks.js from the ConfigMap rota-tasks:
// replace this file with yours (`rota worker --tasks`, see README), or build an image with them.
export default {
  async hello({ args, log }) {
    log('hello', args?.name ?? 'world');
    return 'done';
  },
};
