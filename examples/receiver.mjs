// A webhook receiver in a few lines: verifies each request with the `standardwebhooks` library
// and prints the event. Usage: WEBHOOK_SECRET=whsec_... node examples/receiver.mjs [port]
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const secret = process.env.WEBHOOK_SECRET;
if (!secret) throw new Error('Set WEBHOOK_SECRET to the endpoint’s signing secret (printed by `crm webhooks add`).');
const webhook = new Webhook(secret.replace(/^whsec_/, ''));
const seen = new Set(); // webhook-id is stable across retries: process each once
const port = Number(process.argv[2] ?? 4000);

createServer((req, res) => {
  let body = '';
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => {
    try {
      const event = webhook.verify(body, req.headers);
      const duplicate = seen.has(req.headers['webhook-id']);
      seen.add(req.headers['webhook-id']);
      console.log(`${duplicate ? '(duplicate) ' : ''}${event.type} ${req.headers['webhook-id']}`, JSON.stringify(event.data.object));
      res.writeHead(204).end();
    } catch (error) {
      console.error('rejected:', error.message);
      res.writeHead(400).end();
    }
  });
}).listen(port, '127.0.0.1', () => console.log(`receiver on http://127.0.0.1:${port}/hooks`));
