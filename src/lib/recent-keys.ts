// A bounded memory of recent keys: each kept for a fixed time from when it was added, at most
// `capacity` at once, the oldest forgotten first. A Map keeps insertion order, and with one time to
// live for every key the oldest added is also the first to expire, so the Map is the whole structure
// (docs/decisions/0033-answered-deliveries-remembered.md: why not lru-cache or quick-lru).
import type { Clock } from './clock.ts';

export class RecentKeys {
  /** Each key with the time it expires, in the order added (re-adding moves a key to the end). */
  readonly #expiresAt = new Map<string, number>();

  constructor(
    readonly capacity: number,
    readonly ttlMs: number,
    private readonly clock: Clock,
  ) {}

  get size(): number {
    return this.#expiresAt.size;
  }

  /** Whether `key` was added less than the time to live ago and not pushed out since. A hit does not extend it. */
  has(key: string): boolean {
    const expiresAt = this.#expiresAt.get(key);
    if (expiresAt === undefined) return false;
    if (this.clock() < expiresAt) return true;
    this.#expiresAt.delete(key);
    return false;
  }

  /** Keeps `key` for the time to live from now, forgetting the oldest keys beyond the capacity. */
  add(key: string): void {
    this.#expiresAt.delete(key);
    this.#expiresAt.set(key, this.clock() + this.ttlMs);
    if (this.#expiresAt.size <= this.capacity) return;
    for (const oldest of this.#expiresAt.keys()) {
      this.#expiresAt.delete(oldest);
      if (this.#expiresAt.size <= this.capacity) break;
    }
  }
}
