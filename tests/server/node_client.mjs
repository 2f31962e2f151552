// The OpenAI Node SDK (tests/node/node_modules) as an agent would use it, against the base
// URL given as the first argument; the key is OPENAI_API_KEY. It prints one JSON line per
// thing it saw, as soon as it saw it (a streamed chunk the moment the SDK yields it), so
// that the test reading its stdout can tell a stream relayed chunk by chunk from one held
// whole:
//   {"step": "chat", "status", "headers", "body"}          a chat completion
//   {"step": "file", "status", "headers", "base64"}        files.content: bytes, not text
//   {"step": "busy", "status", "headers", "body"}          a 429 the SDK raised
//   {"step": "stream", "status", "headers"}                the stream's answer, then
//   {"step": "chunk", "chunk"}                             each chunk as it arrives, then
//   {"step": "end"}
// Any other failure is {"step": "error", "message"} and exit 1.
import { createRequire } from "node:module";

const require = createRequire(new URL("../node/package.json", import.meta.url));
const { OpenAI, APIError } = require("openai");

const say = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
// Every header as [name, value] pairs, in order; fetch yields each set-cookie on its own.
const headersOf = (headers) => [...headers];
const ASKED = [{ role: "user", content: "Weather in Paris?" }];

async function main(baseURL) {
  const client = new OpenAI({ baseURL, apiKey: process.env.OPENAI_API_KEY, maxRetries: 0 });

  const chat = await client.chat.completions
    .create({ model: "gpt-fake", messages: ASKED })
    .withResponse();
  say({
    step: "chat",
    status: chat.response.status,
    headers: headersOf(chat.response.headers),
    body: chat.data,
  });

  const file = await client.files.content("file-abc123");
  const bytes = Buffer.from(await file.arrayBuffer());
  say({
    step: "file",
    status: file.status,
    headers: headersOf(file.headers),
    base64: bytes.toString("base64"),
  });

  try {
    await client.models.retrieve("busy-model");
    say({ step: "error", message: "a 429 was not raised" });
    process.exit(1);
  } catch (error) {
    if (!(error instanceof APIError)) throw error;
    say({ step: "busy", status: error.status, headers: headersOf(error.headers), body: error.error });
  }

  const stream = await client.chat.completions
    .create({ model: "gpt-fake", messages: ASKED, stream: true })
    .withResponse();
  say({ step: "stream", status: stream.response.status, headers: headersOf(stream.response.headers) });
  for await (const chunk of stream.data) say({ step: "chunk", chunk });
  say({ step: "end" });
}

main(process.argv[2]).catch((error) => {
  say({ step: "error", message: String(error && error.stack ? error.stack : error) });
  process.exit(1);
});
