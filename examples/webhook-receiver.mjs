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
const handled = new Set(); // a real service keeps these (with a TTL) in its database

createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const raw = Buffer.concat(chunks);
  if (!verifySignature(secret, req.headers['x-bubble-signature'], raw)) {
    res.writeHead(401).end();
    return;
  }
  const key = req.headers['idempotency-key'];
  if (!handled.has(key)) {
    const { id, deliveries } = JSON.parse(raw.toString('utf8'));
    for (const delivery of deliveries) console.log(JSON.stringify({ id, ...delivery }));
    handled.add(key);
  }
  res.writeHead(200).end();
}).listen(port, '127.0.0.1', () => console.error(`listening on http://127.0.0.1:${port}/`));
