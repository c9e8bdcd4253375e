import { InvalidArgumentError } from 'commander';

/** For commander: an integer within [min, max]. */
export function intOption(min: number, max: number) {
  return (text: string): number => {
    const value = Number(text);
    if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
      throw new InvalidArgumentError(`an integer from ${min} to ${max}`);
    }
    return value;
  };
}

/** For commander: a number within [min, max] (decimals allowed). */
export function numberOption(min: number, max: number) {
  return (text: string): number => {
    const value = Number(text);
    if (!/^\d+(\.\d+)?$/.test(text.trim()) || value < min || value > max) {
      throw new InvalidArgumentError(`a number from ${min} to ${max}`);
    }
    return value;
  };
}

const SECONDS_OF = { s: 1, m: 60, h: 3600, d: 86_400 } as const;

/** For commander: 90, 90s, 15m, 2h, 7d → seconds, within [min, max]. */
export function durationOption(min: number, max: number) {
  return (text: string): number => {
    const match = /^(\d{1,9})(s|m|h|d)?$/.exec(text.trim());
    if (!match) throw new InvalidArgumentError('use seconds, or e.g. 30s, 15m, 1h, 7d');
    const seconds = Number(match[1]) * SECONDS_OF[(match[2] ?? 's') as keyof typeof SECONDS_OF];
    if (seconds < min || seconds > max) {
      throw new InvalidArgumentError(`between ${min} s and ${spokenSeconds(max)}`);
    }
    return seconds;
  };
}

/** A bound as people say it: whole days (from 2), else whole hours, else seconds. */
function spokenSeconds(seconds: number): string {
  if (seconds >= 2 * 86_400 && seconds % 86_400 === 0) return `${seconds / 86_400} days`;
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  return `${seconds} s`;
}

export function prefixOption(text: string): string {
  if (!/^[A-Za-z0-9_.:@-]{1,24}$/.test(text)) {
    throw new InvalidArgumentError('1 to 24 characters of [A-Za-z0-9_.:@-]');
  }
  return text;
}
