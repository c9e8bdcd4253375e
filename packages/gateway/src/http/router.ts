import type { IncomingMessage, ServerResponse } from 'node:http';

export type Params = Record<string, string>;

export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  params: Params;
  /** The route pattern that matched, a bounded label for metrics. */
  route: string;
}

export type Handler = (ctx: RequestContext) => Promise<void>;

interface Route {
  method: string;
  pattern: string;
  segments: string[];
  handler: Handler;
}

export type Match =
  | { kind: 'found'; handler: Handler; params: Params; route: string }
  | { kind: 'method-not-allowed'; allow: string[]; route: string }
  | { kind: 'not-found' };

/**
 * Exact segment matching with `:name` parameters. Routes are few and fixed, so a linear scan
 * over pre-split patterns is both simplest and fast.
 */
export class Router {
  private readonly routes: Route[] = [];

  add(method: string, pattern: string, handler: Handler): this {
    this.routes.push({ method, pattern, segments: pattern.split('/').slice(1), handler });
    return this;
  }

  /** Every route, in the order added: what a test that must cover them all walks. */
  list(): Array<{ method: string; pattern: string }> {
    return this.routes.map(({ method, pattern }) => ({ method, pattern }));
  }

  match(method: string, pathname: string): Match {
    const parts = pathname.split('/').slice(1);
    const allow: string[] = [];
    let route = '';
    for (const candidate of this.routes) {
      const params = matchSegments(candidate.segments, parts);
      if (!params) continue;
      if (candidate.method === method || (method === 'HEAD' && candidate.method === 'GET')) {
        return { kind: 'found', handler: candidate.handler, params, route: candidate.pattern };
      }
      allow.push(candidate.method);
      route = candidate.pattern;
    }
    return allow.length > 0 ? { kind: 'method-not-allowed', allow, route } : { kind: 'not-found' };
  }
}

function matchSegments(pattern: string[], parts: string[]): Params | null {
  if (pattern.length !== parts.length) return null;
  const params: Params = {};
  for (let i = 0; i < pattern.length; i++) {
    const want = pattern[i]!;
    const got = parts[i]!;
    if (want.startsWith(':')) {
      let decoded: string;
      try {
        decoded = decodeURIComponent(got);
      } catch {
        // A malformed escape is a bad id on a known route (400), not an unknown route (404):
        // the raw segment keeps its '%', which no id may contain.
        decoded = got;
      }
      if (decoded === '') return null;
      params[want.slice(1)] = decoded;
    } else if (want !== got) {
      return null;
    }
  }
  return params;
}
