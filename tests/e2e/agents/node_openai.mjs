// A weather agent on the OpenAI Node SDK: a tool loop of two model turns, with nothing of
// faultdeck in it. The client takes its key and base URL from OPENAI_API_KEY and
// OPENAI_BASE_URL, and keeps the SDK's own retries (two, honouring Retry-After).
import OpenAI from "openai";

const tools = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "The weather in a city.",
      parameters: {
        type: "object",
        properties: { city: { type: "string" } },
        required: ["city"],
      },
    },
  },
];
const getWeather = ({ city }) => (city === "Paris" ? "sunny" : "unknown");

const client = new OpenAI();
const messages = [{ role: "user", content: "What is the weather in Paris?" }];
for (let turn = 0; turn < 4; turn++) {
  const reply = await client.chat.completions.create({ model: "gpt-4o-mini", messages, tools });
  const message = reply.choices[0].message;
  if (!message.tool_calls?.length) {
    console.log(message.content);
    process.exit(0);
  }
  messages.push(message);
  for (const call of message.tool_calls) {
    const content = getWeather(JSON.parse(call.function.arguments));
    messages.push({ role: "tool", tool_call_id: call.id, content });
  }
}
console.error("no answer after 4 turns");
process.exit(1);
