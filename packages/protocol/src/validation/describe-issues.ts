import type { z } from 'zod';

type Issue = z.core.$ZodIssue;
type Path = readonly PropertyKey[];

/** One broken rule at one field: what describeIssues prints and validation codes are read from. */
export interface FieldIssue {
  path: Path;
  message: string;
  issue: Issue;
}

const SHOWN_ISSUES = 5;

/**
 * Turns a zod failure into one line a person can act on: `posts[3].ts: required; author: must
 * be …`. Unions report the branch the input came closest to; unknown keys name each key.
 */
export function describeIssues(error: z.ZodError): string {
  const issues = fieldIssues(error.issues);
  const shown = issues
    .slice(0, SHOWN_ISSUES)
    .map((one) => `${formatPath(one.path)}: ${one.message}`);
  if (issues.length > SHOWN_ISSUES) shown.push(`and ${issues.length - SHOWN_ISSUES} more`);
  return shown.join('; ');
}

/** The issues of a failure, each at its field: unions descended, unknown keys one by one. */
export function fieldIssues(issues: readonly Issue[], prefix: Path = []): FieldIssue[] {
  const found: FieldIssue[] = [];
  for (const issue of issues) {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      found.push(...fieldIssues(closestBranch(issue.errors), path));
    } else if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys)
        found.push({ path: [...path, key], message: 'unknown field', issue });
    } else {
      found.push({ path, message: issue.message, issue });
    }
  }
  return found;
}

/** `posts[3].ts`; `body` for the input itself. */
export function formatPath(path: Path): string {
  let text = '';
  for (const key of path) {
    if (typeof key === 'number') text += `[${key}]`;
    else if (typeof key === 'string' && /^[A-Za-z_$][\w$]*$/.test(key)) {
      text += text === '' ? key : `.${key}`;
    } else text += `[${JSON.stringify(String(key))}]`;
  }
  return text === '' ? 'body' : text;
}

/**
 * The branch of a union meant for the input sent: its type matches at the union's own level,
 * it knows the most of the keys sent, its issues lie deepest (the input got furthest), and it
 * has the fewest of them; the first of equals.
 */
function closestBranch(branches: readonly (readonly Issue[])[]): readonly Issue[] {
  let best = branches[0]!;
  let bestRank = rank(best);
  for (const branch of branches.slice(1)) {
    const branchRank = rank(branch);
    if (isBefore(branchRank, bestRank)) {
      best = branch;
      bestRank = branchRank;
    }
  }
  return best;
}

function rank(branch: readonly Issue[]): number[] {
  let wrongType = 0;
  let unknownKeys = 0;
  let depth = 0;
  for (const issue of branch) {
    if (issue.code === 'invalid_type' && issue.path.length === 0) wrongType = 1;
    if (issue.code === 'unrecognized_keys' && issue.path.length === 0)
      unknownKeys += issue.keys.length;
    depth = Math.max(depth, issue.path.length);
  }
  return [wrongType, unknownKeys, -depth, branch.length];
}

function isBefore(a: readonly number[], b: readonly number[]): boolean {
  for (let i = 0; i < a.length; i += 1) {
    if (a[i] !== b[i]) return a[i]! < b[i]!;
  }
  return false;
}
