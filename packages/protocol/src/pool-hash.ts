/**
 * The pool a user belongs to: FNV-1a (32-bit) over the UTF-8 bytes of the user id, modulo the
 * pool count. Stable across processes, versions and platforms; documented in docs/architecture.md.
 */
export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    let code = text.charCodeAt(i);
    // Ids are ASCII by grammar; encode anything else as UTF-8 so the hash stays byte-defined.
    if (code < 0x80) {
      hash = Math.imul(hash ^ code, 0x01000193);
      continue;
    }
    const bytes = Buffer.from(String.fromCodePoint(text.codePointAt(i)!), 'utf8');
    if (code >= 0xd800 && code <= 0xdbff) i++;
    for (const byte of bytes) hash = Math.imul(hash ^ byte, 0x01000193);
    code = 0;
  }
  return hash >>> 0;
}

export function poolOf(user: string, pools: number): number {
  const hash = fnv1a32(user);
  // hash % pools without a double's % (a call: a hash above 2^31 is not a small integer).
  return hash - Math.floor(hash / pools) * pools;
}

/** `users` grouped by their pool, in input order within each pool. */
export function usersByPool(users: Iterable<string>, pools: number): Map<number, string[]> {
  const byPool = new Map<number, string[]>();
  for (const user of users) {
    const pool = poolOf(user, pools);
    const list = byPool.get(pool);
    if (list) list.push(user);
    else byPool.set(pool, [user]);
  }
  return byPool;
}
