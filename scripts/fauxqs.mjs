// Starts the fauxqs SQS emulator on 127.0.0.1 through its library API.
// startFauxqs() always listens on 0.0.0.0, so this builds the app with
// buildApp() and listens on loopback itself.
//
// usage: node scripts/fauxqs.mjs PORT PORTFILE   (PORT 0 picks a free port)
import { writeFileSync, renameSync } from "node:fs";
import { buildApp } from "fauxqs";

const [port = "4566", portFile] = process.argv.slice(2);
const app = buildApp({ logger: false });
await app.listen({ port: Number(port), host: "127.0.0.1" });
// Keep idle connections open longer than the Go SDK's client does (90 s): a
// server that closes an idle keep-alive connection first (Node's default is
// 5 s, Fastify's 72 s) races the client's next request on it, and a
// ReceiveMessage whose response is lost that way leaves its messages in
// flight until their visibility timeout.
app.server.keepAliveTimeout = 120_000;
app.server.headersTimeout = 125_000;
const actual = app.server.address().port;
if (portFile) {
  writeFileSync(portFile + ".tmp", String(actual));
  renameSync(portFile + ".tmp", portFile);
}
console.log(`fauxqs listening on http://127.0.0.1:${actual}`);
for (const sig of ["SIGTERM", "SIGINT"]) {
  process.on(sig, async () => {
    await app.close();
    process.exit(0);
  });
}
