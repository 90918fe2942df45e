/** Private Redis servers for tests (the implementation lives in src/dev for the demo too). */
export {
  chooseRedisSource,
  findRedisSource,
  freePort,
  noRedisMessage,
  REDIS_IMAGE,
  RedisServer,
  type RedisServerOptions,
  type RunningRedis,
  startRedis,
} from '../../src/dev/redis-server.js';
