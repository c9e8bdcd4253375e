import { sharedEventJson } from '../change-log/redis-change-log.js';
import { RedisLoggedWriter } from '../change-log/redis-logged-writer.js';
import type { NoticeBoard } from './notice-board.js';

/** Notices share the {g} slot with the shared log: each write logs itself. */
export class RedisNoticeBoard extends RedisLoggedWriter implements NoticeBoard {
  async publish(id: number): Promise<boolean> {
    const { keys } = this;
    const event = sharedEventJson({ kind: 'notice', id, live: true });
    const published = await this.run.publishNotice(
      [keys.notices(), keys.noticeHighest(), keys.sharedEvents()],
      [String(id), this.log.maxPostEvents, event],
    );
    return published === 1;
  }

  async withdraw(id: number): Promise<boolean> {
    const { keys } = this;
    const event = sharedEventJson({ kind: 'notice', id, live: false });
    const withdrawn = await this.run.withdrawNotice(
      [keys.notices(), keys.sharedEvents()],
      [String(id), this.log.maxPostEvents, event],
    );
    return withdrawn === 1;
  }

  async highestId(): Promise<number> {
    return Number((await this.redis.get(this.keys.noticeHighest())) ?? 0);
  }

  async countAfter(seen: number): Promise<number> {
    return this.redis.zcount(this.keys.notices(), `(${seen}`, '+inf');
  }

  async liveIds(): Promise<number[]> {
    return (await this.redis.zrange(this.keys.notices(), '0', '-1')).map(Number);
  }
}
