export { BubbleClient } from './client.js';
export { Emitter } from './emitter.js';
export { BubbleClientError } from './types.js';
export type {
  Badge,
  BubbleClientOptions,
  ClientEvents,
  ClientState,
  ConversationChange,
  ConversationEntry,
  FetchLike,
  FetchResponseLike,
  ReadBody,
  Timers,
  WebSocketConstructor,
  WebSocketLike,
} from './types.js';
