import { accessSync, constants } from 'node:fs';
import path from 'node:path';

/** The first executable `name` on PATH or in the usual bin directories; undefined without one. */
export function findExecutable(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(':'), '/usr/local/bin', '/usr/bin', '/bin'];
  for (const dir of dirs.filter((d) => d !== '')) {
    try {
      accessSync(path.join(dir, name), constants.X_OK);
      return path.join(dir, name);
    } catch {
      // keep looking
    }
  }
  return undefined;
}

/** setpriv --pdeathsig: a child dies with the test process even if that one is SIGKILLed. */
export const SETPRIV = process.platform === 'linux' ? findExecutable('setpriv') : undefined;
