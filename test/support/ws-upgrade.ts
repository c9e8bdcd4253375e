import { randomBytes } from 'node:crypto';
import http from 'node:http';

export interface UpgradeResult {
  /** 101 when the server upgraded, else the HTTP status it answered. */
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface UpgradeOptions {
  localAddress?: string;
  path?: string;
  /** How long the answer may take; a gateway in a process of its own may want longer. */
  timeoutMs?: number;
}

/**
 * A bare HTTP/1.1 upgrade request to /v1/ws on 127.0.0.1:`target.port` (an in-process gateway
 * or a `bubble gateway` process); the socket is destroyed once it is answered.
 */
export function rawUpgrade(
  target: { port: number },
  headers: Record<string, string>,
  options: UpgradeOptions = {},
): Promise<UpgradeResult> {
  return new Promise<UpgradeResult>((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port: target.port,
      path: options.path ?? '/v1/ws',
      method: 'GET',
      agent: false,
      ...(options.localAddress ? { localAddress: options.localAddress } : {}),
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': randomBytes(16).toString('base64'),
        ...headers,
      },
    });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error('the upgrade request was not answered'));
    }, options.timeoutMs ?? 5000);
    req.on('upgrade', (res, socket) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, headers: res.headers, body: '' });
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      });
    });
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end();
  });
}
