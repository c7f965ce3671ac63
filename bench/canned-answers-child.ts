/**
 * The clients' floor for bench/mcp-bridge.ts: an HTTP server in its own process that answers with the bytes the
 * bridge answered once (captured by the driver) and does nothing else. `POST /v1/calls` gets the HTTP API's
 * answer verbatim; `POST /mcp` speaks just enough Streamable HTTP for the SDK client (initialize, 202 for
 * notifications, 405 for the GET stream) and answers tools/list and tools/call with the captured results under
 * the request's id. What a client costs against it is the client's own cost (its HTTP stack, parsing, checks),
 * with no bridge or device behind it.
 * Run by the benchmarks: node [--import tsx] bench/canned-answers-child.ts '<answers JSON>' | @<answers file>
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { announceReady, exitOnSignal } from './child.js';

/** What the driver captured from the real bridge. */
export interface CannedAnswers {
  /** The body of `POST /v1/calls` (`wait: true`), verbatim. */
  httpBody: string;
  /** The `result` of a tools/list and of a tools/call answer, as JSON text. */
  toolsList: string;
  toolsCall: string;
}

const SESSION = 'canned-session';

function main(): void {
  const arg = process.argv[2] ?? '{}';
  const a = JSON.parse(arg.startsWith('@') ? readFileSync(arg.slice(1), 'utf8') : arg) as CannedAnswers;
  // Everything but the id, built once: an answer is one concatenation, as cheap as the verbatim HTTP one.
  const head = (result: string) => `{"result":${result},"jsonrpc":"2.0","id":`;
  const list = head(a.toolsList);
  const call = head(a.toolsCall);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/calls') {
        res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(a.httpBody), 'Cache-Control': 'no-store' }).end(a.httpBody);
        return;
      }
      if (req.method !== 'POST') {
        res.writeHead(req.method === 'DELETE' ? 200 : 405).end();
        return;
      }
      const m = JSON.parse(Buffer.concat(chunks).toString()) as { id?: string | number; method?: string; params?: { protocolVersion?: string } };
      if (m.id === undefined) {
        res.writeHead(202).end();
        return;
      }
      const id = JSON.stringify(m.id) + '}';
      const body =
        m.method === 'initialize'
          ? head(JSON.stringify({ protocolVersion: m.params?.protocolVersion, capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'canned', version: '1' } })) + id
          : (m.method === 'tools/list' ? list : call) + id;
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), 'mcp-session-id': SESSION }).end(body);
    });
  });
  server.listen(0, '127.0.0.1', () => {
    exitOnSignal(() => {
      server.closeAllConnections();
      server.close();
    });
    announceReady({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  });
}

main();
