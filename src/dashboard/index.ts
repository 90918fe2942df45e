/** The web dashboard: pages for every queue, group, job, executor and periodic task, with live updates. */
export { type DashboardHandler, type DashboardOptions, dashboard } from './handler.js';
export { type DashboardServer, isLoopback, type ServeDashboardOptions, type ServerTimeouts, serveDashboard } from './serve.js';
