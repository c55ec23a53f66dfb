/**
 * The jest environment of every project: node's, with what code under test writes straight to the
 * process's stdout and stderr (Powertools logger and metrics lines of in-process handlers, which
 * bypass jest's console) held back per test, and printed only under a test or hook that fails.
 * CRM_TEST_LOGS=1 prints everything as it comes (a test that wants the logs while it runs).
 */
import { Buffer } from 'node:buffer';
import process from 'node:process';
import NodeEnvironment from 'jest-environment-node';

const streams = [process.stdout, process.stderr];

export default class QuietEnvironment extends NodeEnvironment {
  /** What was written since the last test ended, in order: [stream, chunk]. */
  held = [];
  originals = new Map();

  async setup() {
    await super.setup();
    if (process.env.CRM_TEST_LOGS === '1') return;
    for (const stream of streams) {
      const write = stream.write;
      this.originals.set(stream, write);
      stream.write = (chunk, encoding, callback) => {
        this.held.push([stream, typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString(typeof encoding === 'string' ? encoding : 'utf8')]);
        const done = typeof encoding === 'function' ? encoding : callback;
        if (typeof done === 'function') process.nextTick(done);
        return true;
      };
    }
  }

  async teardown() {
    this.release();
    await super.teardown();
  }

  /** Puts the streams back; what is still held belongs to passing tests and is dropped. */
  release() {
    for (const [stream, write] of this.originals) stream.write = write;
    this.originals.clear();
    this.held = [];
  }

  print(title) {
    if (this.held.length === 0) return;
    const out = this.originals.get(process.stderr) ?? process.stderr.write;
    out.call(process.stderr, `\n── output held back until "${title}" failed ──\n`);
    for (const [stream, chunk] of this.held) (this.originals.get(stream) ?? stream.write).call(stream, chunk);
    out.call(process.stderr, `── end of held output ──\n`);
    this.held = [];
  }

  handleTestEvent(event) {
    if (this.originals.size === 0) return;
    if (event.name === 'test_done') {
      if (event.test.errors.length > 0) this.print(fullName(event.test));
      // Output of a beforeAll is kept for the file's first test: a failure there may be rooted in it.
      else this.held = [];
    } else if (event.name === 'hook_failure') {
      this.print(`${event.hook.type}${event.test ? ` of ${fullName(event.test)}` : ''}`);
    }
  }
}

function fullName(test) {
  const names = [];
  for (let block = test; block && block.name !== 'ROOT_DESCRIBE_BLOCK'; block = block.parent) names.unshift(block.name);
  return names.join(' › ');
}
