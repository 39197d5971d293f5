// The Vercel AI SDK's default OpenAI provider, `openai(model)` (the Responses API), run
// against gw as a user would: a tool round trip with generateText, then streamText.
//
// Run by tests/e2e/test_agents_vercel_ai.py, never imported:
//
//     node vercel_ai.mjs NODE_MODULES BASE_URL MODEL
//
// NODE_MODULES is where ./scripts/test installed the pinned packages (build/agents/
// node_modules): they are ESM-only, so they are imported by their resolved paths. Prints
// one JSON line: each call's text, finish reason and tool calls, and the tool's inputs.
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const [modules, baseURL, modelName] = process.argv.slice(2);
const resolve = createRequire(`${modules}/`).resolve;
const load = (name) => import(pathToFileURL(resolve(name)).href);
const { generateText, streamText, tool, stepCountIs } = await load("ai");
const { createOpenAI } = await load("@ai-sdk/openai");
const { z } = await load("zod");

const provider = createOpenAI({ baseURL, apiKey: "sk-vercel-test" });
const model = provider(modelName); // the default: the Responses API
const calls = [];
const lookupWord = tool({
  description: "Look up the secret word for a topic.",
  inputSchema: z.object({ topic: z.string() }),
  execute: async ({ topic }) => {
    calls.push(topic);
    return `the secret word for ${topic} is pelican`;
  },
});

const whole = await generateText({
  model,
  prompt: "What is the secret word for birds?",
  tools: { lookup_word: lookupWord },
  stopWhen: stepCountIs(3),
});
const streamed = streamText({ model, prompt: "Say hello." });
let text = "";
for await (const piece of streamed.textStream) text += piece;

console.log(
  JSON.stringify({
    whole: {
      text: whole.text,
      finish: whole.finishReason,
      steps: whole.steps.map((step) => step.toolCalls.map((call) => call.toolName)),
      inputTokens: whole.usage.inputTokens,
    },
    stream: { text, finish: await streamed.finishReason },
    calls,
  }),
);
