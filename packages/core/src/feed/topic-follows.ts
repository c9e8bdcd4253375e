import { growInt32 } from '../intern-table.js';
import { FollowerLists } from './follower-lists.js';

/** The topics each held user follows, and the reverse index: each topic's held followers. */
export class TopicFollows {
  /** Per user, the topic ids followed (undefined for none). */
  userTopics: (Int32Array | undefined)[] = [];
  /** Beside each of a user's topics, where the user stands in that topic's follower list. */
  private userTopicPos: (Int32Array | undefined)[] = [];
  readonly followers = new FollowerLists();
  /** Topics that lost their last follower since the caller last emptied this list. */
  readonly unfollowed: number[] = [];
  /** Per topic, set membership by stamp, and where the user being set stood (replace). */
  private mark = new Int32Array(0);
  private markStamp = 0;
  private scratchPos = new Int32Array(0);

  ensureTopicCapacity(size: number): void {
    this.followers.grow(size);
    this.mark = growInt32(this.mark, size);
    this.scratchPos = growInt32(this.scratchPos, size);
  }

  /** How many topics u follows. */
  lengthOf(u: number): number {
    return this.userTopics[u]?.length ?? 0;
  }

  /** Replaces u's topics by the distinct ones of `topics`; returns those. */
  replace(u: number, topics: readonly number[]): readonly number[] {
    const old = this.userTopics[u];
    const mark = this.nextMark();
    const next: number[] = [];
    for (const t of topics) {
      if (this.mark[t] === mark) continue;
      this.mark[t] = mark;
      next.push(t);
    }
    const oldMark = this.nextMark();
    const oldPos = this.userTopicPos[u];
    for (let j = 0; old && j < old.length; j++) {
      const t = old[j]!;
      if (this.mark[t] !== mark) continue;
      this.mark[t] = oldMark;
      this.scratchPos[t] = oldPos![j]!;
    }
    const nextPos = new Int32Array(next.length);
    next.forEach((t, k) => {
      if (this.mark[t] !== oldMark) nextPos[k] = this.followers.add(t, u, k);
      else {
        nextPos[k] = this.scratchPos[t]!;
        this.followers.setOffset(t, nextPos[k], k);
      }
    });
    for (let j = 0; old && j < old.length; j++) {
      if (this.mark[old[j]!] !== oldMark) this.removeFollower(old[j]!, oldPos![j]!);
    }
    this.userTopics[u] = next.length > 0 ? Int32Array.from(next) : undefined;
    this.userTopicPos[u] = next.length > 0 ? nextPos : undefined;
    return next;
  }

  private removeFollower(t: number, at: number): void {
    const followers = this.followers;
    if (followers.remove(t, at)) this.unfollowed.push(t);
    const moved = followers.movedUser;
    if (moved >= 0) this.userTopicPos[moved]![followers.movedOffset] = at;
  }

  private nextMark(): number {
    if (++this.markStamp === 0x7fffffff) {
      this.mark.fill(0);
      this.markStamp = 1;
    }
    return this.markStamp;
  }
}
