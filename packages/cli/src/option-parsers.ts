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

/** For commander: 90, 90s, 15m, 2h → seconds, within [min, max]. */
export function durationOption(min: number, max: number) {
  return (text: string): number => {
    const match = /^(\d{1,9})(s|m|h)?$/.exec(text.trim());
    if (!match) throw new InvalidArgumentError('use seconds, or e.g. 30s, 15m, 1h');
    const seconds = Number(match[1]) * { s: 1, m: 60, h: 3600 }[(match[2] ?? 's') as 's'];
    if (seconds < min || seconds > max) {
      throw new InvalidArgumentError(`between ${min} s and ${max / 3600} h`);
    }
    return seconds;
  };
}

export function prefixOption(text: string): string {
  if (!/^[A-Za-z0-9_.:@-]{1,24}$/.test(text)) {
    throw new InvalidArgumentError('1 to 24 characters of [A-Za-z0-9_.:@-]');
  }
  return text;
}
