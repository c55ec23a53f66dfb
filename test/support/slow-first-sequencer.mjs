/**
 * Runs the longest test files first, so no long file starts last and keeps one worker busy alone
 * at the end. Jest does this from its cache of last run's times; a fresh clone has no cache, and
 * jest then orders by file size, which puts some of the longest files near the end. The committed
 * test-times.json (seconds per file, from a full run on a loaded machine: only the order matters;
 * files under 5 s omitted) stands in for the cache where it has no time. Files that need no local stack (infra, artifact) take the first two
 * slots among the long ones: they run while the integration stack is still starting.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { URL } from 'node:url';
import Sequencer from '@jest/test-sequencer';

const BaseSequencer = Sequencer.default ?? Sequencer;
const committed = JSON.parse(readFileSync(new URL('./test-times.json', import.meta.url), 'utf8'));

export default class SlowFirstSequencer extends BaseSequencer {
  sort(tests) {
    const seconds = (test) => {
      const cached = this.time(test);
      if (cached != null) return cached / 1000;
      return committed[path.relative(test.context.config.rootDir, test.path).split(path.sep).join('/')] ?? 0;
    };
    const failed = (test) => (this.hasFailed(test) ? 1 : 0);
    const bySeconds = [...tests].sort((a, b) => failed(b) - failed(a) || seconds(b) - seconds(a));
    // The two longest files that need no stack go first (failed files keep their lead).
    const standalone = bySeconds.filter((t) => !failed(t) && t.context.config.displayName?.name !== 'integration' && seconds(t) >= 5).slice(0, 2);
    const firstFailed = bySeconds.filter((t) => failed(t));
    return [...firstFailed, ...standalone, ...bySeconds.filter((t) => !failed(t) && !standalone.includes(t))];
  }
}
