import type { BadgeService } from '@bubble/badges';
import { sleep } from './live-stack.js';
import type { Workload } from './workload.js';

/**
 * `steady` posts whatever is due on a 100 ms grid, so the rate holds when an ingest is slow
 * (sweep reports the rate it reached); `batch-then-pause` posts a tenth of a second's worth,
 * then waits 100 ms, so a slow ingest lowers the rate (scale only needs every pool to change
 * every sweep).
 */
export type PostPacing = 'steady' | 'batch-then-pause';

/**
 * Live posts by authors drawn by activity, stamped now, through BadgeService.ingestPosts (as
 * the gateway's POST /v1/posts does), until stopped.
 */
export class LivePosts {
  sent = 0;
  private stopping = false;
  private running: Promise<void> | undefined;

  constructor(
    private readonly service: BadgeService,
    private readonly workload: Workload,
    private readonly options: {
      perSecond: number;
      pacing: PostPacing;
      /** Prefix of the post ids, apart from the window's (`w…`). */
      idPrefix: string;
      label: string;
      log: (line: string) => void;
    },
  ) {}

  start(): void {
    this.running ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.running;
  }

  private async run(): Promise<void> {
    const { perSecond, pacing, idPrefix, label, log } = this.options;
    const started = performance.now();
    const { authors, authorRank } = this.workload;
    const perBatch = Math.max(1, Math.round(perSecond / 10));
    const due = () => Math.floor(((performance.now() - started) / 1000) * perSecond) - this.sent;
    let seq = 0;
    let failures = 0;
    while (!this.stopping) {
      const n = pacing === 'steady' ? Math.min(due(), perSecond) : perBatch;
      if (n > 0) {
        const ts = Date.now();
        const posts = Array.from({ length: n }, () => ({
          author: authors[authorRank.next()]!,
          id: `${idPrefix}${seq++}`,
          ts,
        }));
        try {
          await this.service.ingestPosts(posts);
          this.sent += n;
        } catch (err) {
          if (++failures <= 3) log(`${label}: ingest failed: ${String(err)}`);
        }
      }
      await sleep(pacing === 'steady' ? 100 - ((performance.now() - started) % 100) : 100);
    }
  }
}
