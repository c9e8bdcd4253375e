export {
  freePort,
  startRedisServer,
  startRedisCluster,
  waitFor,
  uniquePrefix,
  type RedisServerOptions,
  type RedisServerHandle,
  type RedisClusterNode,
  type RedisClusterHandle,
  type WaitForOptions,
} from './redis-server.js';
