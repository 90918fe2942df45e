/** Private Redis servers for tests (the implementation lives in src/dev for the demo too). */
export {
  CLUSTER_BUS_OFFSET,
  CLUSTER_PORTS,
  chooseRedisSource,
  findRedisSource,
  freeClusterPort,
  freePort,
  noRedisMessage,
  REDIS_IMAGE,
  RedisServer,
  type RedisServerOptions,
  type RunningRedis,
  startRedis,
} from '../../src/dev/redis-server.js';
