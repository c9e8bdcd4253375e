import type { MemoryChangeLog } from '../change-log/memory-change-log.js';
import type { RedDots } from './red-dots.js';

export class MemoryRedDots implements RedDots {
  private readonly marked = new Map<string, number>();

  constructor(private readonly log: MemoryChangeLog) {}

  async mark(name: string, ts: number): Promise<void> {
    this.marked.set(name, ts);
    this.log.appendSharedEventsNow([{ kind: 'reddot', name, ts }]);
  }

  async clear(name: string): Promise<boolean> {
    if (!this.marked.delete(name)) return false;
    this.log.appendSharedEventsNow([{ kind: 'reddot', name, ts: null }]);
    return true;
  }

  async all(): Promise<Record<string, number>> {
    return Object.fromEntries(this.marked);
  }
}
