import { createHmac, timingSafeEqual } from 'node:crypto';

/** How old a signature's timestamp may be before a receiver refuses it (docs/api.md). */
export const SIGNATURE_TOLERANCE_S = 300;

/** `X-Bubble-Signature: t=<unix s>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`. */
export function signWebhook(secret: string, rawBody: string, unixSeconds: number): string {
  const t = Math.floor(unixSeconds);
  const v1 = createHmac('sha256', secret).update(`${t}.${rawBody}`).digest('hex');
  return `t=${t},v1=${v1}`;
}

/**
 * Whether `header` signs `rawBody` (the bytes as received, before any JSON parsing) with
 * `secret`, at a time within `toleranceS` of `nowSeconds`. Constant-time comparison.
 */
export function verifyWebhook(
  secret: string,
  header: string | undefined,
  rawBody: string | Buffer,
  nowSeconds = Date.now() / 1000,
  toleranceS = SIGNATURE_TOLERANCE_S,
): boolean {
  const parts = new Map(
    (header ?? '').split(',').map((part) => {
      const at = part.indexOf('=');
      return [part.slice(0, at).trim(), part.slice(at + 1).trim()] as const;
    }),
  );
  const t = Number(parts.get('t'));
  const v1 = parts.get('v1') ?? '';
  if (!Number.isInteger(t) || Math.abs(nowSeconds - t) > toleranceS) return false;
  const expected = createHmac('sha256', secret).update(`${t}.`).update(rawBody).digest();
  const given = Buffer.from(v1, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
