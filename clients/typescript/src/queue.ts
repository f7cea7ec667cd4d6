// An unbounded FIFO that one consumer awaits. The stream's events are
// bounded by toold's own flow control; this only hands them between tasks.
export class AsyncQueue<T> {
  private items: T[] = [];
  private waiters: ((v: T) => void)[] = [];

  push(v: T): void {
    const w = this.waiters.shift();
    if (w) w(v);
    else this.items.push(v);
  }

  shift(): Promise<T> {
    if (this.items.length > 0) return Promise.resolve(this.items.shift() as T);
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}
