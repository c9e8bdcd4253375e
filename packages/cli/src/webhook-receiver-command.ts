import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pushRequests, verifyWebhook, type WebhookDelivery } from '@bubble/events';

/**
 * `bubble webhook-receiver --port N`: an example of the platform's side of offline delivery
 * (docs/api.md). It checks each request's X-Bubble-Signature with BUBBLE_WEBHOOK_SECRET (read
 * from the environment, never from the command line, where `ps` shows it) and the signature's
 * age (at most 5 min), answers a repeated Idempotency-Key 200 without handling it again, and
 * prints each delivery as one JSON line on stdout with what it would send to APNs (`apns`) and
 * FCM (`fcm`) for it; an entry whose seq is not above the last one applied for its user is
 * printed with `"stale": true` and sends nothing. examples/webhook-receiver.mjs is the same with
 * node: imports only.
 */

/** Bodies past this are refused (a request carries at most 100 badges). */
const MAX_BODY_BYTES = 1024 * 1024;
/** Idempotency keys remembered: a retry comes within minutes, so the newest ones suffice. */
const REMEMBERED_KEYS = 100_000;

export interface WebhookReceiverOptions {
  port: number;
  host: string;
  secret: string;
  /** Where each delivery's line goes (stdout by default). */
  print?: (line: string) => void;
}

async function startWebhookReceiver(options: WebhookReceiverOptions): Promise<Server> {
  const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const seen = new Set<string>();
  const lastSeq = new Map<string, number>();
  const server = createServer((req, res) => {
    void handle(req).then(
      (status) => {
        res.writeHead(status, { 'content-type': 'text/plain' });
        res.end(status === 200 ? 'ok\n' : `${status}\n`);
      },
      () => {
        res.writeHead(400).end();
      },
    );
  });

  async function handle(req: IncomingMessage): Promise<number> {
    if (req.method !== 'POST') return 405;
    const raw = await readBody(req);
    if (raw === null) return 413;
    const signature = req.headers['x-bubble-signature'];
    if (typeof signature !== 'string' || !verifyWebhook(options.secret, signature, raw)) return 401;
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string' || key === '') return 400;
    // A retry of a request handled before: acknowledged, not handled twice.
    if (seen.has(key)) return 200;
    const body = JSON.parse(raw.toString('utf8')) as { id: string; deliveries: WebhookDelivery[] };
    const entries = Array.isArray(body.deliveries) ? body.deliveries : [];
    if (!entries.every((d) => typeof d.seq === 'number' && Array.isArray(d.items))) return 400;
    for (const delivery of entries) {
      if (delivery.seq <= (lastSeq.get(delivery.user) ?? 0)) {
        print(JSON.stringify({ id: body.id, ...delivery, stale: true }));
        continue;
      }
      lastSeq.delete(delivery.user);
      lastSeq.set(delivery.user, delivery.seq);
      if (lastSeq.size > REMEMBERED_KEYS) lastSeq.delete(lastSeq.keys().next().value!);
      print(JSON.stringify({ id: body.id, ...delivery, ...pushRequests(delivery) }));
    }
    seen.add(key);
    if (seen.size > REMEMBERED_KEYS) seen.delete(seen.values().next().value!);
    return 200;
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return server;
}

async function readBody(req: IncomingMessage): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** The command's action: listens until SIGINT or SIGTERM; says where on stderr. */
export async function runWebhookReceiver(options: { port: number; host: string }): Promise<Server> {
  const secret = process.env.BUBBLE_WEBHOOK_SECRET;
  if (!secret) {
    throw new Error('bubble webhook-receiver needs BUBBLE_WEBHOOK_SECRET (the gateways’ secret)');
  }
  const server = await startWebhookReceiver({ ...options, secret });
  const { port } = server.address() as AddressInfo;
  process.stderr.write(`webhook receiver listening on http://${options.host}:${port}/\n`);
  const stop = () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  };
  process.once('SIGINT', stop).once('SIGTERM', stop);
  return server;
}
