// Starts the fauxqs SQS emulator on 127.0.0.1 through its library API.
// startFauxqs() always listens on 0.0.0.0, so this builds the app with
// buildApp() and listens on loopback itself.
//
// usage: node scripts/fauxqs.mjs PORT PORTFILE   (PORT 0 picks a free port)
import { writeFileSync, renameSync } from "node:fs";
import { buildApp } from "fauxqs";

const [port = "4566", portFile] = process.argv.slice(2);
const app = buildApp({ logger: false });
// fauxqs keeps a long poll (ReceiveMessage with WaitTimeSeconds) waiting after
// its client has gone (a canceled context closes the connection), hands it
// the next message that becomes visible, and writes the response to the
// closed socket: the message stays in flight, received by no one, for its
// visibility timeout. A receive whose client is gone by the time its
// response is sent gives its messages back at once (visibility 0), as if
// the poll had ended with the connection. (Their receive count has gone up,
// as it does on SQS when a receive response is lost.)
app.addHook("onSend", async (request, reply, payload) => {
  if (request.headers["x-amz-target"] !== "AmazonSQS.ReceiveMessage" || !clientGone(request)) {
    return payload;
  }
  let messages;
  try {
    messages = JSON.parse(payload).Messages ?? [];
  } catch {
    return payload;
  }
  if (messages.length > 0) {
    const entries = messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0 }));
    await app.inject({
      method: "POST",
      url: "/",
      headers: { "content-type": "application/x-amz-json-1.0", "x-amz-target": "AmazonSQS.ChangeMessageVisibilityBatch" },
      payload: JSON.stringify({ QueueUrl: request.body.QueueUrl, Entries: entries }),
    });
    console.log(`fauxqs: a ReceiveMessage whose client had gone gave back ${messages.length} message(s)`);
  }
  return payload;
});
function clientGone(request) {
  const sock = request.raw.socket;
  return !sock || sock.destroyed || sock.readableEnded || !sock.writable;
}
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
