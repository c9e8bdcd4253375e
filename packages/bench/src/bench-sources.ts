import { randomBytes } from 'node:crypto';
import {
  startSourcesEndpoint,
  type SourcesEndpoint,
  type SourcesGraphEntry,
} from '@bubble/test-utils';
import { followedAuthors, type Workload } from './workload.js';

/**
 * The platform's sources endpoint of a scenario (docs/api.md, "Sources endpoint"): the real
 * test endpoint on loopback, answering at once from the workload's follow graph, and the
 * environment that points a `bubble` child at it.
 */
export interface BenchSources {
  endpoint: SourcesEndpoint;
  secret: string;
  /** BUBBLE_SOURCES_URL and BUBBLE_SOURCES_SECRET, for every role child. */
  env: Record<string, string>;
  close(): Promise<void>;
}

/**
 * `graph` is the platform's truth; requests are recorded only when asked (a long run would keep
 * every one).
 */
export async function startBenchSources(
  graph: Map<string, SourcesGraphEntry>,
  options: { record?: boolean } = {},
): Promise<BenchSources> {
  const secret = randomBytes(32).toString('base64url');
  const endpoint = await startSourcesEndpoint({ secret, graph, record: options.record ?? false });
  return {
    endpoint,
    secret,
    env: { BUBBLE_SOURCES_URL: endpoint.url, BUBBLE_SOURCES_SECRET: secret },
    close: () => endpoint.close(),
  };
}

/**
 * Each workload user's follows as the platform answers them; with `readAt`, also their read
 * cursor as the platform's last visit (used where bubble holds none).
 */
export function workloadGraph(
  workload: Workload,
  options: { readAt: boolean },
): Map<string, SourcesGraphEntry> {
  const graph = new Map<string, SourcesGraphEntry>();
  workload.users.forEach((user, u) => {
    const entry: SourcesGraphEntry = { follows: followedAuthors(workload, u), topics: [] };
    const readAt = workload.readAt[u];
    if (options.readAt && readAt !== null && readAt !== undefined) entry.readAt = readAt;
    graph.set(user, entry);
  });
  return graph;
}
