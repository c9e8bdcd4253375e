/**
 * Strings ↔ dense integer ids, so hot loops index typed arrays instead of hashing strings.
 * Released ids are reused, keeping arrays sized by what is live rather than what ever was.
 */
export class InternTable {
  private readonly ids = new Map<string, number>();
  private readonly names: (string | undefined)[] = [];
  private readonly free: number[] = [];
  /** Ids detached from their names, not free until released. */
  private readonly detached = new Set<number>();

  get size(): number {
    return this.ids.size;
  }

  /** Upper bound of ids handed out; size typed arrays by it. */
  get capacity(): number {
    return this.names.length;
  }

  idOf(name: string): number | undefined {
    return this.ids.get(name);
  }

  intern(name: string): number {
    let id = this.ids.get(name);
    if (id === undefined) {
      id = this.free.pop() ?? this.names.length;
      this.names[id] = name;
      this.ids.set(name, id);
    }
    return id;
  }

  nameOf(id: number): string {
    const name = this.names[id];
    if (name === undefined) throw new Error(`id ${id} is not interned`);
    return name;
  }

  release(id: number): void {
    if (this.detached.delete(id)) {
      this.free.push(id);
      return;
    }
    const name = this.names[id];
    if (name === undefined) return;
    this.ids.delete(name);
    this.names[id] = undefined;
    this.free.push(id);
  }

  /**
   * Frees the name now and the id only at release(id): arrays indexed by the id may still hold
   * it meanwhile. The name interned again gets another id.
   */
  detach(id: number): void {
    const name = this.names[id];
    if (name === undefined) return;
    this.ids.delete(name);
    this.names[id] = undefined;
    this.detached.add(id);
  }
}

/** FNV-1a of a post id: posts are told apart by (author, ts, idHash) without keeping strings. */
export function idHash(id: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193);
  return hash | 0;
}

/** A copy at least `minLength` long (doubling), new slots set to `fill`; the same array if long enough. */
export function growInt32(
  array: Int32Array<ArrayBuffer>,
  minLength: number,
  fill = 0,
): Int32Array<ArrayBuffer> {
  if (array.length >= minLength) return array;
  const next = new Int32Array(Math.max(minLength, array.length * 2, 16));
  next.set(array);
  if (fill !== 0) next.fill(fill, array.length);
  return next;
}

export function growFloat64(
  array: Float64Array<ArrayBuffer>,
  minLength: number,
  fill = 0,
): Float64Array<ArrayBuffer> {
  if (array.length >= minLength) return array;
  const next = new Float64Array(Math.max(minLength, array.length * 2, 16));
  next.set(array);
  if (fill !== 0) next.fill(fill, array.length);
  return next;
}
