// An example push service for bubble's offline delivery (docs/api.md), with node: imports only:
//   BUBBLE_WEBHOOK_SECRET=… node examples/webhook-receiver.mjs [port]
// It verifies X-Bubble-Signature over the raw body, refuses a signature older than 5 minutes,
// answers a repeated Idempotency-Key 200 without handling it twice, and prints each delivery
// as a JSON line. Answer 2xx only once the deliveries are safely handed on: anything else is
// retried (408, 429, 5xx) or given up (other 4xx).
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

/** Whether `header` (t=<unix s>,v1=<hex>) signs `rawBody` with `secret`, made within 5 min. */
export function verifySignature(secret, header, rawBody, nowSeconds = Date.now() / 1000) {
  const fields = Object.fromEntries(
    String(header ?? '')
      .split(',')
      .map((part) => part.trim().split('=', 2)),
  );
  const t = Number(fields.t);
  if (!Number.isInteger(t) || Math.abs(nowSeconds - t) > 300) return false;
  const expected = createHmac('sha256', secret).update(`${t}.`).update(rawBody).digest();
  const given = Buffer.from(fields.v1 ?? '', 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

const secret = process.env.BUBBLE_WEBHOOK_SECRET;
if (!secret) {
  console.error('set BUBBLE_WEBHOOK_SECRET to the gateways’ secret');
  process.exit(2);
}
const port = Number(process.argv[2] ?? 9090);
const MAX_BODY_BYTES = 1024 * 1024; // a delivery of 100 badges is far below this
const REMEMBERED_KEYS = 100_000;
const handled = new Set(); // a real service keeps these (with a TTL) in its database

createServer(async (req, res) => {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      res.writeHead(413, { connection: 'close' }).end();
      req.destroy();
      return;
    }
    chunks.push(chunk);
  }
  const raw = Buffer.concat(chunks);
  if (!verifySignature(secret, req.headers['x-bubble-signature'], raw)) {
    res.writeHead(401).end();
    return;
  }
  const key = String(req.headers['idempotency-key'] ?? '');
  if (!handled.has(key)) {
    let body;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      res.writeHead(400).end(); // signed but not JSON: answering 4xx dead-letters it at once
      return;
    }
    for (const delivery of body.deliveries ?? [])
      console.log(JSON.stringify({ id: body.id, ...delivery }));
    handled.add(key);
    if (handled.size > REMEMBERED_KEYS) handled.delete(handled.values().next().value);
  }
  res.writeHead(200).end();
}).listen(port, '127.0.0.1', () => console.error(`listening on http://127.0.0.1:${port}/`));
