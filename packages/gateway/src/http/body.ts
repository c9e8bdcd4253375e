import type { IncomingMessage } from 'node:http';
import { BubbleError, LIMITS, parseInput, parseJsonText } from '@bubble/protocol';
import type { z } from 'zod';

/** A request whose Content-Length is over `limit` is refused (413) before any byte is read. */
export function refuseDeclaredOversize(
  req: IncomingMessage,
  limit: number = LIMITS.maxBodyBytes,
): void {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) {
    req.resume();
    throw tooLarge(limit);
  }
}

/**
 * Reads a JSON body of at most `limit` bytes. A declared length over the limit is refused
 * before any byte is read; a body that grows past it is cut off at the limit.
 */
export async function readJson(
  req: IncomingMessage,
  limit: number = LIMITS.maxBodyBytes,
): Promise<unknown> {
  refuseDeclaredOversize(req, limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      req.resume();
      throw tooLarge(limit);
    }
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks, size).toString('utf8');
  if (text.trim() === '') throw new BubbleError('UB_ERR_BAD_REQUEST', 'a JSON body is required');
  return parseJsonText(text);
}

export async function readBody<T extends z.ZodType>(
  req: IncomingMessage,
  schema: T,
): Promise<z.infer<T>> {
  return parseInput(schema, await readJson(req));
}

/** As readBody, for calls whose body may be left out (no Content-Length and no bytes). */
export async function readOptionalBody<T extends z.ZodType>(
  req: IncomingMessage,
  schema: T,
): Promise<z.infer<T> | undefined> {
  const declared = req.headers['content-length'];
  const chunked = req.headers['transfer-encoding'] !== undefined;
  if (!chunked && (declared === undefined || declared === '0')) {
    req.resume();
    return undefined;
  }
  return readBody(req, schema);
}

function tooLarge(limit: number): BubbleError {
  return new BubbleError('UB_ERR_TOO_LARGE', `the body is larger than ${limit} bytes`);
}
