/**
 * Debian's Chromium, driven by playwright-core, for the tests that run a page for real. They are
 * skipped where it is missing (.ci/run installs it).
 */
import { accessSync, constants } from 'node:fs';
import type { Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const HAS_CHROMIUM = isExecutable(CHROMIUM);

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Headless, and quiet: the browser's own background traffic stays out of what a test sees. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** From now on: what goes wrong on `page` (errors and warnings) and every URL it requests. */
export function watchPage(page: Page): { problems: string[]; requests: string[] } {
  const problems: string[] = [];
  const requests: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text());
  });
  page.on('request', (r) => requests.push(r.url()));
  return { problems, requests };
}
