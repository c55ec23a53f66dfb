/* global process, console */
/**
 * Runs DynamoDB Local inside a private network namespace (started by lib/local/emulators.ts under
 * `unshare -n`, or `unshare -rn` without root). The namespace has only its own loopback, so java
 * is unreachable from any network, whatever it binds. This process, in the same namespace, brings
 * that loopback up, starts java, and forwards connections from a Unix socket (a file, reachable from
 * outside the namespace) to java's port; the stack's 127.0.0.1 listener forwards to that socket.
 *
 * argv: <unix socket path> <java port> <java args...>. Exits 97 if the loopback cannot be brought
 * up; stops java when it is signalled or when its parent goes away (its stdin closes).
 */
import { spawn, execFileSync } from 'node:child_process';
import { createServer, connect } from 'node:net';
import { rmSync } from 'node:fs';

const [socketPath, javaPort, ...javaArgs] = process.argv.slice(2);
try {
  execFileSync('ip', ['link', 'set', 'lo', 'up'], { stdio: 'ignore' });
} catch (error) {
  console.error(`cannot bring up the namespace's loopback: ${error.message}`);
  process.exit(97);
}

const java = spawn('java', javaArgs, { stdio: ['ignore', 'ignore', 'inherit'] });
const stop = () => java.exitCode === null && java.kill('SIGTERM');
java.once('error', (error) => {
  console.error(error.code === 'ENOENT' ? 'java not found: DynamoDB Local needs Java 17+ (apt-get install openjdk-17-jre-headless).' : error.message);
  process.exit(1);
});
java.once('exit', (code, signal) => {
  rmSync(socketPath, { force: true });
  process.exit(code ?? (signal ? 0 : 1));
});
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.stdin.on('end', stop).on('error', stop).resume();

rmSync(socketPath, { force: true }); // left over by a killed run
createServer((client) => {
  const upstream = connect({ port: Number(javaPort), host: '127.0.0.1', noDelay: true });
  client.pipe(upstream).pipe(client);
  const close = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', close).on('close', close);
  upstream.on('error', close).on('close', close);
}).listen(socketPath);
