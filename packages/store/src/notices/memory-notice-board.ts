import type { MemoryChangeLog } from '../change-log/memory-change-log.js';
import type { NoticeBoard } from './notice-board.js';

/** Each write of a notice or red dot appends its shared event in the same synchronous step. */
export class MemoryNoticeBoard implements NoticeBoard {
  private readonly live = new Set<number>();
  private highest = 0;

  constructor(private readonly log: MemoryChangeLog) {}

  async publish(id: number): Promise<boolean> {
    if (this.live.has(id)) return false;
    this.live.add(id);
    this.highest = Math.max(this.highest, id);
    this.log.appendSharedEventsNow([{ kind: 'notice', id, live: true }]);
    return true;
  }

  async withdraw(id: number): Promise<boolean> {
    if (!this.live.delete(id)) return false;
    this.log.appendSharedEventsNow([{ kind: 'notice', id, live: false }]);
    return true;
  }

  async highestId(): Promise<number> {
    return this.highest;
  }

  async countAfter(seen: number): Promise<number> {
    let count = 0;
    for (const id of this.live) if (id > seen) count++;
    return count;
  }

  async liveIds(): Promise<number[]> {
    return [...this.live].sort((a, b) => a - b);
  }
}
