import { BubbleClientError, type Badge, type FetchResponseLike } from './types.js';

export const isBadge = (value: unknown): value is Badge =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as Badge).epoch === 'string' &&
  typeof (value as Badge).version === 'number';

export async function httpError(res: FetchResponseLike): Promise<BubbleClientError> {
  let body: { error?: { code?: unknown; message?: unknown } } | undefined;
  try {
    body = (await res.json()) as typeof body;
  } catch {
    // not JSON: keep the status alone
  }
  const code = body?.error?.code;
  const message = body?.error?.message;
  return new BubbleClientError(
    typeof code === 'string' ? code : 'http',
    typeof message === 'string' ? message : `HTTP ${res.status}`,
    { status: res.status },
  );
}
