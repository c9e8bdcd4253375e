import type { z } from 'zod';

type RawIssue = Parameters<z.core.$ZodErrorMap>[0];

/**
 * The message of a zod issue as a person reads it: the rule broken, without zod's wording. Passed
 * to every parse of an input (`safeParse(input, { error: issueMessage })`), it comes after a
 * schema's own message and before zod's default: `undefined` leaves an issue to the default.
 */
export const issueMessage: z.core.$ZodErrorMap = (issue) => {
  switch (issue.code) {
    case 'invalid_type':
      return issue.input === undefined
        ? 'required'
        : `must be ${withArticle(issue.expected)}, not ${withArticle(kindOf(issue.input))}`;
    case 'too_small':
      return sizeRule('at least', 'more than', issue);
    case 'too_big':
      return sizeRule('at most', 'less than', issue);
    case 'invalid_value':
      return `must be ${oneOf(issue.values)}`;
    case 'invalid_union':
      return discriminatorRule(issue);
    case 'unrecognized_keys':
      return 'unknown field';
    default:
      return undefined;
  }
};

function sizeRule(
  inclusiveWord: string,
  exclusiveWord: string,
  issue: Extract<RawIssue, { code: 'too_small' | 'too_big' }>,
): string {
  const limit = issue.code === 'too_small' ? issue.minimum : issue.maximum;
  const bound = `${issue.inclusive === false ? exclusiveWord : inclusiveWord} ${String(limit)}`;
  switch (issue.origin) {
    case 'array':
    case 'set':
      return `must have ${bound} ${Number(limit) === 1 ? 'item' : 'items'}`;
    case 'string':
      return `must be ${bound} ${Number(limit) === 1 ? 'character' : 'characters'} long`;
    default:
      return `must be ${bound}`;
  }
}

/** A discriminated union's unknown or missing discriminator names the values it takes. */
function discriminatorRule(issue: RawIssue): string | undefined {
  if (!('note' in issue) || issue.note !== 'No matching discriminator') return undefined;
  const options = 'options' in issue && Array.isArray(issue.options) ? issue.options : [];
  const field = 'discriminator' in issue ? String(issue.discriminator) : '';
  const input: unknown = issue.input;
  const missing =
    typeof input === 'object' &&
    input !== null &&
    (input as Record<string, unknown>)[field] === undefined;
  return `${missing ? 'required, ' : ''}must be ${oneOf(options)}`;
}

function oneOf(values: readonly unknown[]): string {
  const shown = values.map((value) => JSON.stringify(value)).join(', ');
  return values.length === 1 ? shown : `one of ${shown}`;
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function withArticle(kind: string): string {
  if (kind === 'null' || kind === 'undefined') return kind;
  return /^[aeiou]/.test(kind) ? `an ${kind}` : `a ${kind}`;
}
