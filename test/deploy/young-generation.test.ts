/**
 * A gateway is started with the young generation GATEWAY_YOUNG_GENERATION_FLAG asks for (V8
 * sizes it at start-up only): by every way this repository starts one, and by the benches that
 * measure it, so the figures are those of the deployment.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { GATEWAY_YOUNG_GENERATION_FLAG, youngGenerationSized } from '@bubble/gateway';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { GATEWAY_NODE_ARGS } from '../../packages/bench/src/live-stack.js';
import { loadComposeFile, serviceEnvironment } from './compose-runner.js';

interface Manifest {
  kind?: string;
  spec?: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } };
}

const root = path.resolve(import.meta.dirname, '../..');
const variables = { BUBBLE_API_KEY: 'k', BUBBLE_JWT_SECRET: 's' };

describe("the gateway's young generation", () => {
  it('is told apart on the command line and in NODE_OPTIONS', () => {
    expect(youngGenerationSized([GATEWAY_YOUNG_GENERATION_FLAG])).toBe(true);
    expect(youngGenerationSized([], `--enable-source-maps ${GATEWAY_YOUNG_GENERATION_FLAG}`)).toBe(
      true,
    );
    expect(youngGenerationSized(['--max-semi-space-size', '32'])).toBe(true);
    expect(youngGenerationSized(['--max-old-space-size=4096'], '--max-semi-space-sizes')).toBe(
      false,
    );
    expect(youngGenerationSized([])).toBe(false);
  });

  it('is given to every gateway of both compose files', () => {
    for (const file of ['docker-compose.yml', 'docker-compose.cluster.yml']) {
      const compose = loadComposeFile(path.join(root, file), variables);
      const gateways = Object.entries(compose.services).filter(([name]) =>
        name.startsWith('gateway'),
      );
      expect(gateways.length).toBeGreaterThan(0);
      for (const [, service] of gateways) {
        const env = serviceEnvironment(service);
        expect(youngGenerationSized([], env.NODE_OPTIONS)).toBe(true);
        expect(env.NODE_OPTIONS).toContain(GATEWAY_YOUNG_GENERATION_FLAG);
      }
    }
  });

  it("is given to the Kubernetes gateway, to npm start's process and to the benches' gateways", () => {
    const docs = YAML.parseAllDocuments(
      readFileSync(path.join(root, 'deploy/kubernetes/base/gateway.yaml'), 'utf8'),
    ).map((doc) => doc.toJS() as Manifest);
    const deployment = docs.find((doc) => doc.kind === 'Deployment')!;
    const env = deployment.spec!.template.spec.containers[0]!.env;
    expect(env.find((entry) => entry.name === 'NODE_OPTIONS')?.value).toContain(
      GATEWAY_YOUNG_GENERATION_FLAG,
    );
    const scripts = (
      JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
        scripts: Record<string, string>;
      }
    ).scripts;
    expect(scripts.start).toContain(
      `node ${GATEWAY_YOUNG_GENERATION_FLAG} packages/cli/bin/bubble.js all`,
    );
    expect(GATEWAY_NODE_ARGS).toContain(GATEWAY_YOUNG_GENERATION_FLAG);
  });
});
