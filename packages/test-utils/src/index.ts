export {
  freePort,
  startRedisServer,
  restartRedisServer,
  type RedisServerOptions,
  type RedisServerHandle,
} from './redis-server.js';
export {
  startRedisCluster,
  type RedisClusterNode,
  type RedisClusterHandle,
  type RedisClusterOptions,
  type ClusterTopology,
} from './redis-cluster.js';
export { waitFor, type WaitForOptions } from './wait-for.js';
export { uniquePrefix } from './unique-prefix.js';
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
export {
  startSourcesEndpoint,
  type SourcesEndpoint,
  type SourcesEndpointMode,
  type SourcesEndpointOptions,
  type SourcesEndpointRequest,
  type SourcesGraphEntry,
} from './sources-endpoint.js';
