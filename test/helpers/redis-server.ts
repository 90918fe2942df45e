/** Private redis-server processes for tests (the implementation lives in src/dev for the demo too). */
export { RedisServer, freePort, type RedisServerOptions } from '../../src/dev/redis-server.js';
