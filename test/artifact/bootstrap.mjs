/**
 * A stand-in for the Lambda Node.js runtime's bootstrap, copied next to the bundles under test
 * (outside the project, so nothing of the project's node_modules is resolvable from the bundle).
 * Like Lambda it imports the handler module once (the cold start) and then invokes the same
 * handler for every event it is given (a warm container): one JSON invocation per stdin line, one
 * JSON answer per line on fd 3 (stdout and stderr stay the function's log). Node builtins only.
 *
 * argv: <task dir> <handler setting, e.g. index.handler> <function name> <timeout s> <memory MB>
 */
import { randomUUID } from 'node:crypto';
import { existsSync, createWriteStream } from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

const [taskDir, handlerSetting, functionName, timeoutSeconds, memoryMb] = process.argv.slice(2);
const answers = createWriteStream('', { fd: 3 });
const answer = (message) => answers.write(JSON.stringify(message) + '\n');
const describe = (error) => ({ name: error?.name, message: error?.message ?? String(error), stack: error?.stack });

// Lambda's rule: "<file>.<export>" names <file>.mjs, .js or .cjs in the task root.
const dot = handlerSetting.lastIndexOf('.');
const base = handlerSetting.slice(0, dot);
const exportName = handlerSetting.slice(dot + 1);
const file = ['.mjs', '.js', '.cjs'].map((ext) => path.join(taskDir, base + ext)).find((f) => existsSync(f));

let handler;
try {
  if (!file) throw new Error(`Runtime.ImportModuleError: no ${base}.mjs/.js/.cjs in ${taskDir}`);
  const module = await import(pathToFileURL(file).href);
  handler = module[exportName];
  if (typeof handler !== 'function') throw new Error(`Runtime.HandlerNotFound: ${base}.${exportName} is not a function`);
  answer({ init: 'ok' });
} catch (error) {
  answer({ init: 'error', error: describe(error) });
  process.exit(1);
}

for await (const line of createInterface({ input: process.stdin })) {
  const { id, event } = JSON.parse(line);
  const deadline = Date.now() + Number(timeoutSeconds) * 1000;
  const context = {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:${functionName}`,
    memoryLimitInMB: String(memoryMb),
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'artifact-test',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  };
  try {
    answer({ id, result: (await handler(event, context)) ?? null });
  } catch (error) {
    answer({ id, error: describe(error) });
  }
}
