import type { Duplex } from 'node:stream';

/**
 * New connections being admitted at once (upgraded, not yet sent their first badge): past it an
 * upgrade is refused with 503 + Retry-After before it costs a handshake, a token check or a
 * badge. A reconnect storm then queues in the clients' backoff, not in the gateway's memory and
 * Redis round trips (docs/security.md "Reconnect storm").
 */
export const DEFAULT_MAX_ADMITTING = 256;

/** Who counts the connections being admitted (the WsGateway). */
export interface AdmissionCount {
  admitting: number;
}

/** An upgrade's socket while it counts against the gateway's admissions. */
export type AdmittedSocket = Duplex & { admittedBy?: AdmissionCount | null };

/** Counts `socket` as being admitted until its first badge (releaseAdmission) or its close. */
export function admit(socket: Duplex, count: AdmissionCount): AdmittedSocket {
  const admitted = socket as AdmittedSocket;
  admitted.admittedBy = count;
  count.admitting++;
  socket.once('close', onAdmittedClose);
  return admitted;
}

export function releaseAdmission(socket: AdmittedSocket): void {
  const count = socket.admittedBy;
  if (!count) return;
  socket.admittedBy = null;
  count.admitting--;
  socket.removeListener('close', onAdmittedClose);
}

function onAdmittedClose(this: Duplex): void {
  releaseAdmission(this as AdmittedSocket);
}

/** An upgrade's 'error' listener until the WebSocket takes the socket (`this` is the socket). */
export function destroySocket(this: Duplex): void {
  this.destroy();
}

/** Answers an upgrade with an HTTP error and closes its socket. */
export function refuse(
  socket: Duplex,
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify({ error: { code, message } });
  const reason =
    {
      400: 'Bad Request',
      401: 'Unauthorized',
      403: 'Forbidden',
      404: 'Not Found',
      429: 'Too Many Requests',
      503: 'Service Unavailable',
    }[status] ?? 'Error';
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n${body}`,
  );
}
