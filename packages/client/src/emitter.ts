/** A tiny typed event emitter: one payload per event, listeners called in subscription order. */
export class Emitter<Events> {
  private readonly listeners = new Map<keyof Events, Set<(value: never) => void>>();

  /** Subscribes; returns a function that unsubscribes. */
  on<K extends keyof Events>(type: K, listener: (value: Events[K]) => void): () => void {
    let set = this.listeners.get(type);
    if (!set) this.listeners.set(type, (set = new Set()));
    set.add(listener);
    return () => this.off(type, listener);
  }

  off<K extends keyof Events>(type: K, listener: (value: Events[K]) => void): void {
    this.listeners.get(type)?.delete(listener);
  }

  /**
   * Calls every listener of `type`. One that throws does not stop the others nor the client:
   * its exception is rethrown from a fresh task, where it surfaces as an uncaught error.
   */
  protected emit<K extends keyof Events>(type: K, value: Events[K]): void {
    for (const listener of [...(this.listeners.get(type) ?? [])]) {
      try {
        (listener as (value: Events[K]) => void)(value);
      } catch (error) {
        (globalThis as unknown as { setTimeout(f: () => void): void }).setTimeout(() => {
          throw error;
        });
      }
    }
  }
}
