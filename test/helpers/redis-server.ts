/** Private redis-server processes for tests (the implementation lives in src/dev for the demo too). */
export { freePort, RedisServer, type RedisServerOptions } from '../../src/dev/redis-server.js';
