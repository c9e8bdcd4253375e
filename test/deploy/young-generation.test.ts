/**
 * A gateway is started with the young generation GATEWAY_NODE_FLAGS ask for (V8 sizes it at
 * start-up only, and NODE_OPTIONS refuses the minimum) by every way this repository starts one;
 * the benches take GATEWAY_NODE_FLAGS themselves, so their figures are those of the deployment.
 * Started so, it holds its young generation from the start (pretouched), so its RSS does not
 * climb under load.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { GATEWAY_NODE_FLAGS } from '@bubble/gateway';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { loadComposeFile } from './compose-runner.js';

interface Manifest {
  kind?: string;
  spec?: { template: { spec: { containers: { command?: string[]; args?: string[] }[] } } };
}

const root = path.resolve(import.meta.dirname, '../..');
const variables = { BUBBLE_API_KEY: 'k', BUBBLE_JWT_SECRET: 's' };
const heapTuning = path.join(root, 'packages/gateway/dist/live/heap-tuning.js');

/** node's argv up to the script: what comes between `node` and `packages/cli/bin/bubble.js`. */
function nodeFlags(argv: readonly string[]): string[] {
  const node = argv.indexOf('node');
  const script = argv.indexOf('packages/cli/bin/bubble.js');
  expect(node, argv.join(' ')).toBeGreaterThanOrEqual(0);
  expect(script, argv.join(' ')).toBeGreaterThan(node);
  return argv.slice(node + 1, script);
}

/** pretouchYoungGeneration's answer and the process's RSS around it, in a node given `flags`. */
function pretouched(flags: readonly string[]) {
  const script = `
    const { pretouchYoungGeneration } = await import(${JSON.stringify(heapTuning)});
    const before = process.memoryUsage.rss();
    const young = pretouchYoungGeneration();
    console.log(JSON.stringify({ ...young, grewBy: process.memoryUsage.rss() - before }));`;
  const run = spawnSync(process.execPath, [...flags, '--input-type=module', '-e', script], {
    encoding: 'utf8',
  });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as { committedBytes: number; sized: boolean; grewBy: number };
}

describe("the gateway's young generation", () => {
  it('is given to every gateway of both compose files, on the command line', () => {
    for (const file of ['docker-compose.yml', 'docker-compose.cluster.yml']) {
      const compose = loadComposeFile(path.join(root, file), variables);
      const gateways = Object.entries(compose.services).filter(([name]) =>
        name.startsWith('gateway'),
      );
      expect(gateways.length).toBeGreaterThan(0);
      for (const [, service] of gateways) {
        expect(service.entrypoint).toBeInstanceOf(Array);
        expect(nodeFlags(service.entrypoint as string[])).toEqual(GATEWAY_NODE_FLAGS);
      }
    }
  });

  it("is given to the Kubernetes gateway and to npm start's process", () => {
    const docs = YAML.parseAllDocuments(
      readFileSync(path.join(root, 'deploy/kubernetes/base/gateway.yaml'), 'utf8'),
    ).map((doc) => doc.toJS() as Manifest);
    const container = docs.find((doc) => doc.kind === 'Deployment')!.spec!.template.spec
      .containers[0]!;
    expect(nodeFlags(container.command!)).toEqual(GATEWAY_NODE_FLAGS);
    expect(container.args).toEqual(['gateway']);
    const scripts = (
      JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
        scripts: Record<string, string>;
      }
    ).scripts;
    expect(scripts.start).toContain(
      `node ${GATEWAY_NODE_FLAGS.join(' ')} packages/cli/bin/bubble.js all`,
    );
  });

  it('is resident from the start when node is given the flags, and told apart when not', () => {
    const sized = pretouched(GATEWAY_NODE_FLAGS);
    expect(sized.sized).toBe(true);
    expect(sized.committedBytes).toBe(2 * 64 * 2 ** 20);
    // Both semi-spaces written: the RSS grew by most of their 128 MiB (pages shared with the rest
    // aside; 99 MiB was seen while other test files ran beside it), far above the unsized 16 MiB.
    expect(sized.grewBy).toBeGreaterThan(64 * 2 ** 20);
    const unsized = pretouched([]);
    expect(unsized.sized).toBe(false);
    expect(unsized.grewBy).toBeLessThan(16 * 2 ** 20);
  });
});
