/**
 * Plays an EventBridge schedule rule: invokes the function's real handler with a Scheduled Event
 * every `intervalMs`, one run at a time (a run that outlasts the interval delays the next).
 */
import { randomUUID } from 'node:crypto';
import type { ScheduledEvent } from 'aws-lambda';

export interface ScheduleTimerOptions {
  name: string;
  intervalMs: number;
  handler: (event: ScheduledEvent) => Promise<unknown>;
  onError?: (error: unknown) => void;
}

export class ScheduleTimer {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = false;

  constructor(private readonly options: ScheduleTimerOptions) {}

  start(): void {
    this.stopped = false;
    this.schedule();
  }

  /** Stops the timer; a run under way finishes first. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.tick().finally(() => this.schedule());
    }, this.options.intervalMs);
  }

  private async tick(): Promise<void> {
    const event: ScheduledEvent = {
      version: '0', id: randomUUID(), 'detail-type': 'Scheduled Event', source: 'aws.events', account: '000000000000',
      time: new Date().toISOString(), region: 'us-east-1', resources: [`arn:aws:events:us-east-1:000000000000:rule/${this.options.name}`], detail: {},
    };
    try {
      await this.options.handler(event);
    } catch (error) {
      this.options.onError?.(error);
    }
  }
}
