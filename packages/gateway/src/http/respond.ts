import type { ServerResponse } from 'node:http';
import { BubbleError } from '@bubble/protocol';

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

export function sendEmpty(
  res: ServerResponse,
  status: number,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, headers);
  res.end();
}

export function sendError(
  res: ServerResponse,
  error: BubbleError,
  headers: Record<string, string> = {},
): void {
  const extra = { ...headers };
  if (error.code === 'UB_ERR_UNAVAILABLE' || error.code === 'UB_ERR_RATE_LIMITED') {
    extra['retry-after'] ??= '1';
  }
  sendJson(res, error.status, error.toJSON(), extra);
}
