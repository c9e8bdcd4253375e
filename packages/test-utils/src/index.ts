export {
  freePort,
  startRedisServer,
  restartRedisServer,
  startRedisCluster,
  waitFor,
  uniquePrefix,
  type RedisServerOptions,
  type RedisServerHandle,
  type RedisClusterNode,
  type RedisClusterHandle,
  type RedisClusterOptions,
  type ClusterTopology,
  type WaitForOptions,
} from './redis-server.js';
export {
  BUBBLE_BIN,
  BubbleProcess,
  RoleProcess,
  exitText,
  type BubbleProcessOptions,
  type Exit,
  type LogLine,
  type Role,
  type RoleProcessOptions,
} from './bubble-process.js';
export { diesWithParent, findExecutable, reapOnExit, terminate } from './child-processes.js';
export { cleanEnv } from './clean-env.js';
export { TcpProxy } from './tcp-proxy.js';
