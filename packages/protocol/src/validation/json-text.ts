import { BubbleError } from '../errors.js';
import { LIMITS } from '../schemas.js';

/**
 * How deep arrays and objects nest in `text`, read without parsing; stops counting past
 * `limit`. A body of a megabyte of `[` parses, but every recursive walk of it afterwards (a
 * size check's JSON.stringify, a schema) overflows the stack: the depth is checked first.
 */
export function jsonDepthOver(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/**
 * JSON.parse of a request body, a frame or an entry: `UB_ERR_BAD_REQUEST` when it is not JSON
 * or nests deeper than LIMITS.maxJsonDepth.
 */
export function parseJsonText(text: string, what = 'the body'): unknown {
  if (jsonDepthOver(text, LIMITS.maxJsonDepth)) {
    throw new BubbleError(
      'UB_ERR_BAD_REQUEST',
      `${what} nests arrays and objects deeper than ${LIMITS.maxJsonDepth} levels`,
    );
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new BubbleError('UB_ERR_BAD_REQUEST', `${what} is not valid JSON`, { cause: err });
  }
}
