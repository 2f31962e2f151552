// An agent as a user writes it with the OpenAI Node SDK, and nothing of faultdeck: the SDK
// reads OPENAI_BASE_URL and OPENAI_API_KEY from the environment, as it does by default.
// It asks for the weather, runs the tool the model calls, and sends the result back for the
// answer. With --stream it then has a reply streamed, printing each piece as it comes.
import OpenAI from "openai";

const client = new OpenAI();
const tools = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Weather in a city.",
      parameters: {
        type: "object",
        properties: { city: { type: "string" } },
        required: ["city"],
      },
    },
  },
];
const weather = ({ city }) => (city === "Paris" ? "sunny" : "unknown");

async function main() {
  const messages = [{ role: "user", content: "Weather in Paris?" }];
  const first = await client.chat.completions.create({ model: "gpt-fake", messages, tools });
  const asked = first.choices[0].message;
  messages.push(asked);
  for (const call of asked.tool_calls ?? []) {
    const args = JSON.parse(call.function.arguments);
    console.log(`tool ${call.function.name} ${JSON.stringify(args)}`);
    messages.push({ role: "tool", tool_call_id: call.id, content: weather(args) });
  }
  const second = await client.chat.completions.create({ model: "gpt-fake", messages, tools });
  console.log(`answer ${second.choices[0].message.content}`);

  if (process.argv.includes("--stream")) {
    const stream = await client.chat.completions.create({
      model: "gpt-fake",
      messages: [{ role: "user", content: "Say hello." }],
      stream: true,
    });
    for await (const chunk of stream) {
      console.log(`chunk ${JSON.stringify(chunk.choices[0]?.delta?.content ?? "")}`);
    }
    console.log("streamed");
  }
}

main().catch((error) => {
  console.error(error instanceof OpenAI.APIError ? `error ${error.status} ${error.message}` : error);
  process.exit(1);
});
