import { processRssBytes } from './children.js';
import { machineFacts, round2, sleep, startGateway } from './live-stack.js';
import { histogramQuantile, SdkFleet } from './sdk-fleet.js';
import {
  platformCall,
  SDK_STACK_DEFAULTS,
  startSdkStack,
  wrongBadges,
  type SdkStackOptions,
} from './sdk-stack.js';

export interface SoakOptions extends SdkStackOptions {
  /** SDK clients (one user each), spread over `drivers` processes. */
  sockets: number;
  postsPerSecond: number;
  minutes: number;
  /** Share of the sockets that reconnect (close the app, open it again) every minute. */
  churnPerMinute: number;
  /** Allowed RSS growth past the first sixth's high-water mark, as a share of it. */
  rssMargin: number;
}

export const SOAK_DEFAULTS: SoakOptions = {
  ...SDK_STACK_DEFAULTS,
  sockets: 10_000,
  postsPerSecond: 200,
  minutes: 60,
  churnPerMinute: 0.2,
  authors: 1000,
  rssMargin: 0.25,
};

interface Minute {
  minute: number;
  pushes: number;
  p50Ms: number | null;
  p95Ms: number | null;
  p99Ms: number | null;
  overdue: number;
  posts: number;
  reconnects: number;
  errors: number;
  rssMb: Record<string, number>;
}

/**
 * `bench soak`: real SDK clients (sdk-driver.ts) on `bubble server`, `bubble core` and `bubble
 * gateway` children of their own redis-server, posts at a steady rate and a share of the sockets
 * reconnecting every minute, for `minutes`. Per minute: push latency, errors, RSS of every
 * process. At the end: every open client holds the stored badge, presence counts exactly the
 * users with a socket, and no process grew past its first sixth's high-water mark (+ margin).
 */
export async function benchSoak(partial: Partial<SoakOptions> = {}) {
  const options = { ...SOAK_DEFAULTS, ...partial };
  const { log } = options;
  const stack = await startSdkStack('soak', options.sockets, options);
  const { redis, children, users, authors, authorOf, secrets } = stack;
  let fleet: SdkFleet | undefined;
  try {
    log(`soak: ${users.length} users follow one of ${authors.length} authors`);
    const gateway = await startGateway({
      redisUrl: redis.url,
      pools: options.pools,
      secrets,
      log,
    });
    children.push(gateway);
    const processes = () => {
      const pids: Record<string, number> = {};
      for (const child of children) pids[child.name] = child.pid;
      fleet?.pids.forEach((pid, k) => (pids[`driver${k}`] = pid));
      return pids;
    };
    const platform = platformCall(gateway.url, secrets.apiKey);

    fleet = await SdkFleet.start({
      processes: options.drivers,
      users,
      authorOf,
      log,
      client: { urls: [gateway.url], perAddress: options.perAddress, jwtSecret: secrets.jwtSecret },
    });
    const clients = fleet;
    const connectDeadline = performance.now() + 600_000;
    while ((await clients.progress()).open < users.length) {
      if (performance.now() > connectDeadline)
        throw new Error('soak: the sockets never all opened');
      await sleep(500);
    }
    log(`soak: ${users.length} sockets open; posting ${options.postsPerSecond}/s`);
    await clients.mark();
    await clients.latency();

    const rss: Record<string, number[]> = {};
    const sampleRss = async () => {
      for (const [name, pid] of Object.entries(processes())) {
        const bytes = await processRssBytes(pid);
        if (bytes !== null) (rss[name] ??= []).push(bytes);
      }
    };
    const minutes: Minute[] = [];
    let postSeq = 0;
    let postErrors = 0;
    let posts = 0;
    let reconnects = 0;
    let countedErrors = 0;
    const churnPerSecond = (options.sockets * options.churnPerMinute) / 60;
    let churnOwed = 0;
    const started = performance.now();
    const endAt = started + options.minutes * 60_000;
    let nextMinute = started + 60_000;
    let nextRss = started;
    let second = started;
    while (performance.now() < endAt) {
      // One call a second with the second's posts; each post announced when its call is answered.
      const batch = Array.from({ length: options.postsPerSecond }, () => {
        const author = Math.floor(Math.random() * options.authors);
        return {
          author,
          post: { author: authors[author]!, id: `s${++postSeq}`, ts: Date.now() - 1000 },
        };
      });
      for (let i = 0; i < batch.length; i += 1000) {
        const part = batch.slice(i, i + 1000);
        const answer = await platform('POST', '/v1/posts', { posts: part.map((b) => b.post) });
        const answerAt = performance.timeOrigin + performance.now();
        if (answer.status !== 202) postErrors++;
        else for (const b of part) clients.announce(b.author, answerAt);
        posts += part.length;
      }
      churnOwed += churnPerSecond;
      if (churnOwed >= 1) {
        const count = Math.floor(churnOwed);
        churnOwed -= count;
        reconnects += await clients.churn(count);
      }
      if (performance.now() >= nextRss) {
        nextRss += 10_000;
        await sampleRss();
      }
      if (performance.now() >= nextMinute) {
        nextMinute += 60_000;
        minutes.push(await minuteFigures());
      }
      second += 1000;
      await sleep(Math.max(0, second - performance.now()));
    }
    if (minutes.length < options.minutes) minutes.push(await minuteFigures());

    async function minuteFigures(): Promise<Minute> {
      const latency = await clients.latency();
      const w = await clients.window();
      await clients.mark();
      const errors = unexplained(w);
      countedErrors += errors;
      const q = (p: number) => histogramQuantile(latency.histogram, latency.samples, p);
      const minute: Minute = {
        minute: minutes.length + 1,
        pushes: latency.samples,
        p50Ms: q(0.5),
        p95Ms: q(0.95),
        p99Ms: q(0.99),
        overdue: latency.overdue,
        posts,
        reconnects,
        errors,
        rssMb: Object.fromEntries(
          Object.entries(rss).map(([name, s]) => [name, round2(s.at(-1)! / 2 ** 20)]),
        ),
      };
      posts = 0;
      reconnects = 0;
      log(`soak: ${JSON.stringify(minute)}`);
      return minute;
    }

    // Quiet: every client open again and holding the stored badge.
    const quietDeadline = performance.now() + 120_000;
    while ((await clients.progress()).open < users.length && performance.now() < quietDeadline)
      await sleep(500);
    let wrong = await wrongBadges(clients, platform);
    while (wrong.length > 0 && performance.now() < quietDeadline) {
      await sleep(1000);
      wrong = await wrongBadges(clients, platform);
    }

    // Presence: a tenth of the apps close for good; online users = users with a socket.
    const ended = await clients.end(Math.floor(users.length / 10));
    const expectedOnline = users.length - ended.length;
    let online = -1;
    const presenceDeadline = performance.now() + 60_000;
    while (performance.now() < presenceDeadline) {
      online = ((await platform('GET', '/v1/cluster')).json as { online: number }).online;
      if (online === expectedOnline) break;
      await sleep(500);
    }

    const crashed = children.filter((c) => !c.alive).map((c) => c.name);
    const growth = rssGrowth(rss, options.rssMargin);
    const errors = countedErrors + postErrors + wrong.length + crashed.length;
    return {
      scenario: 'soak',
      sockets: options.sockets,
      postsPerSecond: options.postsPerSecond,
      minutes: options.minutes,
      churnPerMinute: options.churnPerMinute,
      errors,
      errorDetail: {
        unexplainedAttempts: countedErrors,
        postErrors,
        wrongBadges: wrong.length,
        crashed,
      },
      presence: { online, expected: expectedOnline, correct: online === expectedOnline },
      rss: growth,
      rssGrowthOk: Object.values(growth).every((g) => g.ok),
      curves: minutes,
      machine: machineFacts(),
    };
  } finally {
    await fleet?.close();
    await stack.stop();
  }
}

/**
 * Attempts of the window that no limit explains: upgrades refused other than 429 or 503, sockets
 * closed before their first badge other than with 1013, and socket errors other than those.
 */
function unexplained(w: Awaited<ReturnType<SdkFleet['window']>>): number {
  let n = 0;
  for (const [status, count] of Object.entries(w.refused))
    if (!['429', '503'].includes(status)) n += count;
  for (const [code, count] of Object.entries(w.closedEarly)) {
    // 1006 follows every refused upgrade (the refusal is counted above).
    if (code !== '1013' && code !== '1006') n += count;
  }
  const refusedTotal = Object.values(w.refused).reduce((a, b) => a + b, 0);
  const abnormal = (w.closedEarly['1006'] ?? 0) - refusedTotal;
  if (abnormal > 0) n += abnormal;
  return n;
}

/** Per process: the first sixth's high-water mark, the highest sample after it, and the check. */
function rssGrowth(rss: Record<string, number[]>, margin: number) {
  const out: Record<string, { firstSixthMaxMb: number; laterMaxMb: number; ok: boolean }> = {};
  for (const [name, samples] of Object.entries(rss)) {
    const cut = Math.max(1, Math.ceil(samples.length / 6));
    const first = Math.max(...samples.slice(0, cut));
    const later = samples.length > cut ? Math.max(...samples.slice(cut)) : first;
    out[name] = {
      firstSixthMaxMb: round2(first / 2 ** 20),
      laterMaxMb: round2(later / 2 ** 20),
      ok: later <= first * (1 + margin),
    };
  }
  return out;
}
