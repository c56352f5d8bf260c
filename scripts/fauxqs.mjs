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
// Two system attributes SQS sets and fauxqs does not (docs/local.md), added
// here, in the harness, so that triage's trust in dead-letter evidence runs
// locally as it does on AWS:
//   - SenderId: fauxqs says "000000000000" for every message; SQS names the
//     principal that sent it. Here it is the access key id that signed the
//     SendMessage(Batch) request (AWS_ACCESS_KEY_ID).
//   - DeadLetterQueueSourceArn: SQS sets it on a message its redrive policy
//     moved to a DLQ; fauxqs moves the message (same id) without it. A
//     message received from another queue than the one it was sent to was
//     moved by the broker: its source is the queue it was sent to.
// The harness remembers, for each message id it saw sent, the sender and
// the queue (the most recent senders only: maxSent).
const sent = new Map(); // message id -> { sender, queue }
const maxSent = 1_000_000;
const arns = new Map(); // queue name -> ARN
function remember(id, sender, queueUrl) {
  if (sent.size >= maxSent) {
    sent.delete(sent.keys().next().value);
  }
  sent.set(id, { sender, queue: queueName(queueUrl) });
}
function queueName(url) {
  return String(url ?? "").replace(/\/+$/, "").split("/").pop();
}
function accessKeyOf(request) {
  const m = /Credential=([^/,\s]+)\//.exec(request.headers.authorization ?? "");
  return m ? m[1] : "000000000000";
}
async function arnOf(name) {
  if (!arns.has(name)) {
    const res = await app.inject({
      method: "POST",
      url: "/",
      headers: { "content-type": "application/x-amz-json-1.0", "x-amz-target": "AmazonSQS.GetQueueUrl" },
      payload: JSON.stringify({ QueueName: name }),
    });
    const url = JSON.parse(res.payload).QueueUrl;
    const attrs = await app.inject({
      method: "POST",
      url: "/",
      headers: { "content-type": "application/x-amz-json-1.0", "x-amz-target": "AmazonSQS.GetQueueAttributes" },
      payload: JSON.stringify({ QueueUrl: url, AttributeNames: ["QueueArn"] }),
    });
    const arn = JSON.parse(attrs.payload).Attributes?.QueueArn;
    if (!arn) {
      return "";
    }
    arns.set(name, arn);
  }
  return arns.get(name);
}
app.addHook("onSend", async (request, reply, payload) => {
  const target = request.headers["x-amz-target"];
  if (reply.statusCode !== 200 || typeof payload !== "string") {
    return payload;
  }
  if (target === "AmazonSQS.SendMessage" || target === "AmazonSQS.SendMessageBatch") {
    let out;
    try {
      out = JSON.parse(payload);
    } catch {
      return payload;
    }
    const sender = accessKeyOf(request);
    if (out.MessageId) {
      remember(out.MessageId, sender, request.body.QueueUrl);
    }
    for (const e of out.Successful ?? []) {
      remember(e.MessageId, sender, request.body.QueueUrl);
    }
    return payload;
  }
  if (target !== "AmazonSQS.ReceiveMessage") {
    return payload;
  }
  const names = [...(request.body.AttributeNames ?? []), ...(request.body.MessageSystemAttributeNames ?? [])];
  const all = names.includes("All");
  const wantSender = all || names.includes("SenderId");
  const wantSource = all || names.includes("DeadLetterQueueSourceArn");
  if (!wantSender && !wantSource) {
    return payload;
  }
  let out;
  try {
    out = JSON.parse(payload);
  } catch {
    return payload;
  }
  if (!out.Messages?.length) {
    return payload;
  }
  const here = queueName(request.body.QueueUrl);
  for (const m of out.Messages) {
    const rec = sent.get(m.MessageId);
    if (!rec) {
      continue;
    }
    m.Attributes ??= {};
    if (wantSender) {
      m.Attributes.SenderId = rec.sender;
    }
    if (wantSource && rec.queue !== here) {
      const arn = await arnOf(rec.queue);
      if (arn) {
        m.Attributes.DeadLetterQueueSourceArn = arn;
      }
    }
  }
  return JSON.stringify(out);
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
