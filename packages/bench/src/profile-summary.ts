import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  file: string;
  /** Sampled time, and the part of it the process was busy (not idle). */
  totalMs: number;
  busyMs: number;
  /** Functions by self time, with their inclusive time; shares are of busy time. */
  top: { fn: string; selfMs: number; selfPct: number; totalPct: number }[];
  /** Self time by where the code lives: a package, node's internals, GC. */
  byArea: { area: string; pct: number }[];
}

/**
 * The hot spots of a V8 `.cpuprofile` (node --cpu-prof): self and inclusive time per function,
 * and self time per package. Inclusive time counts a function once per stack, also when it
 * recurses.
 */
async function summarizeCpuProfile(file: string, limit = 20): Promise<ProfileSummary> {
  const profile = JSON.parse(await readFile(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const parent = new Map<number, number>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parent.set(child, node.id);

  let totalUs = 0;
  let idleUs = 0;
  const selfByFn = new Map<string, number>();
  const totalByFn = new Map<string, number>();
  const byArea = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    totalUs += us;
    const name = node.callFrame.functionName;
    if (name === '(idle)') {
      idleUs += us;
      continue;
    }
    const fn = functionKey(node);
    selfByFn.set(fn, (selfByFn.get(fn) ?? 0) + us);
    const area = areaOf(node);
    byArea.set(area, (byArea.get(area) ?? 0) + us);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const key = functionKey(byId.get(at)!);
      if (seen.has(key)) continue;
      seen.add(key);
      totalByFn.set(key, (totalByFn.get(key) ?? 0) + us);
    }
  }
  const busyUs = Math.max(1, totalUs - idleUs);
  const pct = (us: number) => Math.round((us / busyUs) * 1000) / 10;
  return {
    file,
    totalMs: Math.round(totalUs / 1000),
    busyMs: Math.round(busyUs / 1000),
    top: [...selfByFn]
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([fn, us]) => ({
        fn,
        selfMs: Math.round(us / 1000),
        selfPct: pct(us),
        totalPct: pct(totalByFn.get(fn) ?? us),
      })),
    byArea: [...byArea]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 12)
      .map(([area, us]) => ({ area, pct: pct(us) })),
  };
}

/** Profiles written into `dir` whose names start with `prefix`, newest last. */
async function profilesIn(dir: string, prefix: string): Promise<string[]> {
  const names = (await readdir(dir)).filter(
    (n) => n.startsWith(prefix) && n.endsWith('.cpuprofile'),
  );
  return names.sort().map((n) => path.join(dir, n));
}

function functionKey(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  if (!url) return functionName || '(anonymous)';
  return `${functionName || '(anonymous)'} ${shortUrl(url)}:${lineNumber + 1}`;
}

function shortUrl(url: string): string {
  const modules = url.lastIndexOf('node_modules/');
  if (modules >= 0) return url.slice(modules + 'node_modules/'.length);
  const packages = url.lastIndexOf('/packages/');
  if (packages >= 0) return url.slice(packages + 1);
  return url.replace(/^file:\/\//, '');
}

function areaOf(node: ProfileNode): string {
  const { url, functionName } = node.callFrame;
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules) return modules[1]!;
  const pkg = /\/packages\/([^/]+)\//.exec(url);
  if (pkg) return `@bubble/${pkg[1]}`;
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/').slice(0, 2).join('/')}`;
  return url;
}

/** Prints the hot spots of the profiles the children wrote. */
export async function logProfiles(
  dir: string,
  prefix: string,
  log: (line: string) => void,
): Promise<ProfileSummary[]> {
  const summaries: ProfileSummary[] = [];
  for (const file of await profilesIn(dir, prefix).catch(() => [])) {
    const summary = await summarizeCpuProfile(file, 15).catch(() => null);
    if (!summary) continue;
    summaries.push(summary);
    log(`profile ${file}: ${summary.busyMs} ms busy of ${summary.totalMs} ms`);
    for (const area of summary.byArea) log(`  area ${area.pct}% ${area.area}`);
    for (const top of summary.top) {
      log(`  self ${top.selfPct}% (total ${top.totalPct}%) ${top.fn}`);
    }
  }
  return summaries;
}
