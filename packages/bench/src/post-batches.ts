import { RawHttpConnection, httpRequest } from './http-client.js';

/** What one phase of `POST /v1/posts` calls got: response times are sorted, in ms. */
export interface PostPhase {
  accepted: number;
  refused: number;
  statuses: Record<string, number>;
  elapsed: number;
  times: number[];
}

/**
 * `POST /v1/posts` calls of `batchSize` posts on every connection, one after another, for
 * `seconds`; each call's posts come from `nextPosts` (called right before it is sent). A call
 * answered otherwise than 202 counts its whole batch refused.
 */
export async function postBatchesFor(
  connections: RawHttpConnection[],
  seconds: number,
  apiKey: string,
  batchSize: number,
  nextPosts: () => unknown[],
): Promise<PostPhase> {
  const endsAt = performance.now() + seconds * 1000;
  let accepted = 0;
  let refused = 0;
  const statuses: Record<string, number> = {};
  const times: number[] = [];
  const started = performance.now();
  await Promise.all(
    connections.map(async (connection) => {
      while (performance.now() < endsAt) {
        const request = httpRequest(
          'POST',
          '/v1/posts',
          { 'X-Api-Key': apiKey },
          JSON.stringify({ posts: nextPosts() }),
        );
        const sent = performance.now();
        const response = await connection.request(request);
        times.push(performance.now() - sent);
        statuses[response.status] = (statuses[response.status] ?? 0) + 1;
        if (response.status === 202) {
          accepted += (JSON.parse(response.body.toString()) as { accepted: number }).accepted;
        } else refused += batchSize;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  times.sort((a, b) => a - b);
  return { accepted, refused, statuses, elapsed, times };
}
