// Loaded first, so the repair below runs after ioredis has done what it repairs.
import 'ioredis';

/**
 * Makes String.prototype a fast object again in this process. ioredis declares `class
 * VerbatimString extends String`, and V8 turns the prototype a class extends into a dictionary
 * ("setup mode"), expecting it to be filled. V8 makes such a prototype fast again when a
 * property load on an object walks through it, but a load on a string primitive never does. So
 * in every process that loads ioredis, each method of a string looked up in optimized code
 * (`indexOf`, `slice`, `charCodeAt`, `startsWith`) stayed a generic lookup (`Builtins_LoadIC`):
 * 4 % of the gateway's CPU under pushes, and epochCode took 72 instead of 20 ns
 * (docs/benchmarks.md, "The push path, third round"). A few loads through an object whose
 * prototype is String.prototype, from a function called often enough to have feedback, make V8
 * migrate it back; a test checks that it did, and that ioredis alone still leaves it slow.
 */
export function keepStringPrototypeFast(): void {
  const probe = Object.create(String.prototype) as { charAt?: unknown };
  const load = (): unknown => probe.charAt;
  for (let i = 0; i < 100; i++) load();
}

keepStringPrototypeFast();
