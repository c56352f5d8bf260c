// Starts the dynalite DynamoDB emulator on 127.0.0.1, in memory, with short
// table state transitions (tables are ACTIVE after 10 ms instead of 500 ms).
//
// usage: node scripts/dynalite.cjs PORT PORTFILE   (PORT 0 picks a free port)
const fs = require("node:fs");
const dynalite = require("dynalite");

const [port = "4567", portFile] = process.argv.slice(2);
const server = dynalite({ createTableMs: 10, deleteTableMs: 10, updateTableMs: 10 });
// Keep idle connections open longer than the Go SDK's client does (90 s): a
// server that closes an idle keep-alive connection first (Node's default is
// 5 s, Fastify's 72 s) races the client's next request on it, and a
// ReceiveMessage whose response is lost that way leaves its messages in
// flight until their visibility timeout.
server.keepAliveTimeout = 120_000;
server.headersTimeout = 125_000;
server.listen(Number(port), "127.0.0.1", () => {
  const actual = server.address().port;
  if (portFile) {
    fs.writeFileSync(portFile + ".tmp", String(actual));
    fs.renameSync(portFile + ".tmp", portFile);
  }
  console.log(`dynalite listening on http://127.0.0.1:${actual}`);
});
for (const sig of ["SIGTERM", "SIGINT"]) {
  // In memory: nothing to flush. (server.close would wait for idle keep-alive connections.)
  process.on(sig, () => process.exit(0));
}
