import type { Readable } from 'node:stream';

/**
 * Reads a child's output line by line as it arrives: each line that parses as JSON (a log line)
 * goes to `onJson`, every other non-blank line (its newline kept) to `onOther`. A line split
 * across chunks waits for its end.
 */
export function readJsonLines<T>(
  stream: Readable,
  onJson: (value: T) => void,
  onOther: (text: string) => void,
): void {
  let partial = '';
  stream.on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString('utf8')).split('\n');
    partial = parts.pop()!;
    for (const part of parts) {
      if (part.trim() === '') continue;
      let value: T;
      try {
        value = JSON.parse(part) as T;
      } catch {
        onOther(`${part}\n`);
        continue;
      }
      onJson(value);
    }
  });
}
