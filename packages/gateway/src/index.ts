export {
  HEADERS_TIMEOUT_MS,
  HttpGateway,
  REQUEST_TIMEOUT_MS,
  type GatewayOptions,
  type RouteGroup,
} from './http-gateway.js';
export {
  Authenticator,
  MAX_MINTED_TTL_SECONDS,
  mintToken,
  publicKeyAlgorithm,
  type AuthOptions,
  type MintOptions,
} from './auth.js';
export {
  DEFAULT_CLIENT_LIMITS,
  type ClientLimitOptions,
  type RateLimit,
} from './http/client-limits.js';
export { GatewayMetrics } from './metrics.js';
export { LoadMonitor } from './load-monitor.js';
export { LiveUsers, type PushStats } from './live/live-users.js';
export { HEARTBEAT_MS, PONG_TIMEOUT_MS, WsGateway } from './live/ws-gateway.js';
export {
  ClientAddressResolver,
  parseCidr,
  parseCidrList,
  type Cidr,
  type ClientAddress,
} from './http/client-address.js';
export { PushRing } from './live/push-ring.js';
export {
  GATEWAY_NODE_FLAGS,
  pretouchYoungGeneration,
  tuneHeapForConnections,
  type YoungGeneration,
} from './live/heap-tuning.js';
export { heartbeatFigures, type LiveFigures } from './dashboard/live-figures.js';
