// Reads deliveries as JSON lines {secret, body, signature} on stdin and
// prints, for each, whether @octokit/webhooks-methods accepts the signature
// and the signature it computes itself: {"ok": bool, "sign": string}.
import { sign, verify } from "@octokit/webhooks-methods";
import { createInterface } from "node:readline";

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  const d = JSON.parse(line);
  const ok = await verify(d.secret, d.body, d.signature);
  const computed = await sign(d.secret, d.body);
  process.stdout.write(JSON.stringify({ ok, sign: computed }) + "\n");
}
