export { BubbleClient } from './client.js';
export { Emitter } from './emitter.js';
export { BubbleClientError } from './types.js';
export type {
  Badge,
  BubbleClientOptions,
  ClientEvents,
  ClientState,
  FetchLike,
  FetchResponseLike,
  ReadBody,
  Timers,
  WebSocketConstructor,
  WebSocketLike,
} from './types.js';
