import { growInt32 } from '../intern-table.js';
import { FollowerLists } from './follower-lists.js';

/**
 * Who follows whom, both ways. Every user's follow list lives in one arena (two typed arrays,
 * not two per user: 200k small typed arrays are 400k heap objects that every major GC marks).
 * User u's follows are followAuthor[followStart[u] … + followLen[u]), followLen -1 when u has
 * no follow set; followPos holds, at the same index, where u stands in that author's follower
 * list. The followers of each author are the reverse index the counter walks.
 */
export class FollowArena {
  followStart = new Int32Array(0);
  followLen = new Int32Array(0);
  followAuthor = new Int32Array(0);
  followPos = new Int32Array(0);
  /** Per author, its held followers (their offsets: the author's place in their follows). */
  readonly followers = new FollowerLists();
  /** Authors that lost their last follower since the caller last emptied this list. */
  readonly unfollowed: number[] = [];
  /** End of the used part of the arena; ranges left by replaced follow sets are garbage. */
  private arenaUsed = 0;
  private arenaLive = 0;
  /** Per author, set membership by stamp (no Set allocated), and where u stood (replace). */
  private scratch = new Int32Array(0);
  private scratchPos = new Int32Array(0);
  private scratchStamp = 0;

  ensureUserCapacity(n: number): void {
    this.followStart = growInt32(this.followStart, n);
    this.followLen = growInt32(this.followLen, n, -1);
  }

  ensureAuthorCapacity(n: number): void {
    this.followers.grow(n);
    this.scratch = growInt32(this.scratch, n);
    this.scratchPos = growInt32(this.scratchPos, n);
  }

  /** How many authors u follows (0 without a follow set). */
  lengthOf(u: number): number {
    return Math.max(0, this.followLen[u]!);
  }

  /**
   * Replaces u's follows by the distinct authors of `next`, which it reorders (the distinct
   * ones first); returns how many those are.
   */
  replace(u: number, next: Int32Array): number {
    const seen = this.scratchMark();
    let n = 0;
    for (let k = 0; k < next.length; k++) {
      const a = next[k]!;
      if (this.scratch[a] === seen) continue;
      this.scratch[a] = seen;
      next[n++] = a;
    }
    // Allocated first: making room may move the old range (read below) within the arena.
    const at = this.allocate(n);
    const oldStart = this.followStart[u]!;
    const oldLength = this.followLen[u]!;
    const authors = this.followAuthor;
    const positions = this.followPos;
    if (oldLength > 0) {
      // Where u stands in each old author's list, by author (scratchPos), for those kept.
      const stillFollowed = this.scratchMark();
      for (let k = 0; k < n; k++) this.scratch[next[k]!] = stillFollowed;
      for (let k = oldStart; k < oldStart + oldLength; k++) {
        const a = authors[k]!;
        if (this.scratch[a] === stillFollowed) this.scratchPos[a] = positions[k]!;
        else this.removeFollower(a, positions[k]!);
      }
      const wasFollowed = this.scratchMark();
      for (let k = oldStart; k < oldStart + oldLength; k++) this.scratch[authors[k]!] = wasFollowed;
      for (let k = 0; k < n; k++) {
        const a = next[k]!;
        authors[at + k] = a;
        if (this.scratch[a] === wasFollowed) {
          const position = this.scratchPos[a]!;
          positions[at + k] = position;
          this.followers.setOffset(a, position, k);
        } else {
          positions[at + k] = this.followers.add(a, u, k);
        }
      }
      this.arenaLive -= oldLength;
    } else {
      for (let k = 0; k < n; k++) {
        authors[at + k] = next[k]!;
        positions[at + k] = this.followers.add(next[k]!, u, k);
      }
    }
    this.followStart[u] = at;
    this.followLen[u] = n;
    return n;
  }

  /** Takes u out of the follower lists of its authors; u has no follow set after. */
  drop(u: number): void {
    const start = this.followStart[u]!;
    const length = this.followLen[u]!;
    for (let k = start; k < start + length; k++) {
      this.removeFollower(this.followAuthor[k]!, this.followPos[k]!);
    }
    if (length > 0) this.arenaLive -= length;
    this.followLen[u] = -1;
  }

  private removeFollower(a: number, at: number): void {
    const followers = this.followers;
    if (followers.remove(a, at)) this.unfollowed.push(a);
    const moved = followers.movedUser;
    if (moved >= 0) this.followPos[this.followStart[moved]! + followers.movedOffset] = at;
  }

  /**
   * Room for `length` follows at the end of the arena. When it is full, the live ranges are
   * copied into a new arena twice their size, in user order: garbage goes, amortised O(1).
   */
  private allocate(length: number): number {
    if (this.arenaUsed + length > this.followAuthor.length) {
      const size = Math.max(1024, 2 * (this.arenaLive + length));
      const authors = new Int32Array(size);
      const positions = new Int32Array(size);
      let used = 0;
      for (let u = 0; u < this.followLen.length; u++) {
        const l = this.followLen[u]!;
        if (l <= 0) continue;
        const start = this.followStart[u]!;
        authors.set(this.followAuthor.subarray(start, start + l), used);
        positions.set(this.followPos.subarray(start, start + l), used);
        this.followStart[u] = used;
        used += l;
      }
      this.followAuthor = authors;
      this.followPos = positions;
      this.arenaUsed = used;
    }
    const at = this.arenaUsed;
    this.arenaUsed += length;
    this.arenaLive += length;
    return at;
  }

  /** A fresh stamp for the per-author scratch marks. */
  private scratchMark(): number {
    if (++this.scratchStamp === 0x7fffffff) {
      this.scratch.fill(0);
      this.scratchStamp = 1;
    }
    return this.scratchStamp;
  }
}
