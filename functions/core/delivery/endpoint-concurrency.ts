/**
 * Attempts in flight per endpoint, in this container (docs/architecture.md#fair-delivery): at most `bound` POSTs to one
 * endpoint at once. One more waits for a slot up to `waitMs` (a healthy receiver frees one within
 * milliseconds, so a burst to one endpoint is only spaced out); past that the caller re-schedules
 * the delivery instead of attempting it, so a hanging receiver holds at most `bound` attempts of
 * a container, never its whole batch. No shared state, no write: the breaker (circuit-breaker.ts)
 * is what stops a hanging endpoint across containers.
 */
interface Slots { inFlight: number; waiting: (() => void)[]; started: Set<{ at: number }>; lastEndedAt: number }

/** One container's slots (container-memory.ts holds them): a fresh process starts with none. */
export class EndpointSlots {
  private readonly byEndpoint = new Map<string, Slots>();

  /** How many attempts to `endpointId` this container has in flight now. */
  inFlightTo(endpointId: string): number { return this.byEndpoint.get(endpointId)?.inFlight ?? 0; }

  /**
   * How long attempts to `endpointId` here have been stalled: the age of the oldest one in flight,
   * if no attempt to it has ended since that one started (0 otherwise). A slow but answering
   * receiver keeps ending attempts, so it never looks stalled; one that has just begun to hang does.
   */
  stalledMs(endpointId: string, now: number): number {
    const slots = this.byEndpoint.get(endpointId);
    if (!slots) return 0;
    let oldest = now;
    for (const s of slots.started) oldest = Math.min(oldest, s.at);
    return slots.lastEndedAt >= oldest ? 0 : now - oldest;
  }

  /** A slot for one attempt to `endpointId`: its release function, or undefined when none freed within `waitMs`. */
  async acquire(endpointId: string, bound: number, waitMs: number, now: () => number = Date.now): Promise<(() => void) | undefined> {
    let slots = this.byEndpoint.get(endpointId);
    if (!slots) this.byEndpoint.set(endpointId, (slots = { inFlight: 0, waiting: [], started: new Set(), lastEndedAt: 0 }));
    if (slots.inFlight >= bound) {
      const s = slots;
      const woken = await new Promise<boolean>((resolve) => {
        const wake = () => { clearTimeout(timer); resolve(true); };
        const timer = setTimeout(() => { s.waiting.splice(s.waiting.indexOf(wake), 1); resolve(false); }, waitMs);
        s.waiting.push(wake);
      });
      // A woken waiter was handed the releaser's slot (inFlight unchanged).
      if (!woken) return undefined;
    } else {
      slots.inFlight += 1;
    }
    let released = false;
    const start = { at: now() };
    slots.started.add(start);
    return () => {
      if (released) return;
      released = true;
      slots.started.delete(start);
      slots.lastEndedAt = now();
      const next = slots.waiting.shift();
      if (next) return next();
      slots.inFlight -= 1;
      if (slots.inFlight === 0 && this.byEndpoint.get(endpointId) === slots) this.byEndpoint.delete(endpointId);
    };
  }
}
