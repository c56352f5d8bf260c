// Patches the pinned fauxqs (package-lock.json: 2.4.1) in node_modules where
// it differs from SQS in a way the project's tests meet; idempotent, run by
// scripts/local.sh before the emulator starts. docs/local.md lists each patch.
//
// 1. Characters of a message body. SQS allows #x9 | #xA | #xD | #x20 to
//    #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF (SendMessage's API
//    reference). fauxqs tests its INVALID_MESSAGE_BODY_CHAR regular
//    expression without the u flag, so it sees UTF-16 code units and rejects
//    every character above U+FFFF (an emoji, say) with
//    InvalidMessageContents. With the u flag and the supplementary range it
//    reads code points as SQS does (a lone surrogate is still refused).
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "node_modules", "fauxqs");
const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const file = join(root, "dist/sqs/sqsTypes.js");
const before = String.raw`export const INVALID_MESSAGE_BODY_CHAR = /[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD]/;`;
const after = String.raw`export const INVALID_MESSAGE_BODY_CHAR = /[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u; // patched by agentdlq scripts/patch-fauxqs.mjs`;
const src = readFileSync(file, "utf8");
if (src.includes(after)) {
  process.exit(0);
}
if (!src.includes(before)) {
  console.error(`patch-fauxqs: fauxqs ${version}'s ${file} has no line to patch; check whether this fauxqs still rejects characters above U+FFFF, and update scripts/patch-fauxqs.mjs`);
  process.exit(1);
}
writeFileSync(file, src.replace(before, after));
console.error(`patch-fauxqs: fauxqs ${version}: message bodies may hold characters above U+FFFF, as on SQS`);
