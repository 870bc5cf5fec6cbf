// The official openai npm SDK against one rehearsal engine.
// Usage: node client.mjs BASE_URL KIND VERSION   (exit 0 when every check passes)
import OpenAI from 'openai';

const [baseURL, kind, version] = process.argv.slice(2);
const client = new OpenAI({ baseURL: baseURL + '/v1', apiKey: 'unused', maxRetries: 0, timeout: 30000 });
const failures = [];
const check = (ok, what) => { if (!ok) failures.push(what); };

const tools = [{
  type: 'function',
  function: {
    name: 'get_weather', description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}];
const ask = [{ role: 'user', content: 'What is the weather in Paris?' }];

// Streamed tool call through the SDK's stream helper: it reports the call's
// arguments as done and assembles the final completion.
const stream = client.chat.completions.stream({
  model: 'qwen', messages: ask, tools, stream_options: { include_usage: true },
});
const done = [];
stream.on('tool_calls.function.arguments.done', (e) => done.push(e));
const final = await stream.finalChatCompletion();
check(done.length === 1 && done[0].name === 'get_weather', `arguments.done events: ${JSON.stringify(done)}`);
check(done.length === 1 && typeof JSON.parse(done[0].arguments).city === 'string', 'arguments are JSON with a city');
check(final.choices[0].finish_reason === 'tool_calls', `finish_reason ${final.choices[0].finish_reason}`);
check(final.usage && final.usage.completion_tokens > 0 &&
  final.usage.total_tokens === final.usage.prompt_tokens + final.usage.completion_tokens, `usage ${JSON.stringify(final.usage)}`);

// Non-streamed: the same call and usage.
const plain = await client.chat.completions.create({ model: 'qwen', messages: ask, tools });
const call = plain.choices[0].message.tool_calls?.[0];
check(call?.function.arguments === done[0]?.arguments, `non-streamed call ${JSON.stringify(plain.choices[0].message)}`);
check(plain.usage.completion_tokens === final.usage?.completion_tokens, 'the same usage streamed and not');

// Text, n=2: the prompt counted once, 8 tokens of text and the EOS per choice.
const two = await client.chat.completions.create({ model: 'qwen', n: 2, max_tokens: 100, messages: [{ role: 'user', content: 'hello' }] });
check(two.choices.length === 2 && two.choices[1].message.content.length > 0, 'two choices');
check(two.usage.completion_tokens === 18, `n=2 usage ${JSON.stringify(two.usage)}`);

// Streamed text with the async iterator.
let text = '';
let finish = null;
for await (const chunk of await client.chat.completions.create({ model: 'qwen', messages: [{ role: 'user', content: 'hi' }], stream: true })) {
  for (const c of chunk.choices) {
    text += c.delta?.content ?? '';
    finish = c.finish_reason ?? finish;
  }
}
check(text.length > 0 && finish === 'stop', `text stream ${JSON.stringify(text)} finish ${finish}`);

// Errors: a context overflow is an APIError with status 400.
try {
  await client.chat.completions.create({ model: 'qwen', messages: [{ role: 'user', content: 'word '.repeat(3000) }] });
  check(false, 'overflow accepted');
} catch (e) {
  check(e instanceof OpenAI.APIError && e.status === 400, `overflow: ${e}`);
  check(!(version === '0.16.0') || /maximum context length is 2048 tokens/.test(e.message), `overflow message ${e.message}`);
}
// stream_options without stream: vLLM refuses it, SGLang does not check.
try {
  await client.chat.completions.create({ model: 'qwen', messages: [{ role: 'user', content: 'hi' }], stream_options: { include_usage: true } });
  check(kind === 'sglang', 'vLLM accepted stream_options without stream');
} catch (e) {
  check(kind === 'vllm' && e.status === 400, `stream_options: ${e}`);
}
// An error event mid-stream ends the iteration with an error.
try {
  const s = await client.chat.completions.create({ model: 'qwen', messages: [{ role: 'user', content: 'hi' }], stream: true },
    { headers: { 'X-Rehearsal-Fail': 'stream_error_after=2' } });
  for await (const _ of s) { /* drain */ }
  check(false, 'stream error not raised');
} catch (e) {
  check(/injected stream error/.test(String(e.message)), `stream error: ${e}`);
}

// The Responses API where the engine serves it (vLLM >= 0.10), else 404.
const servesResponses = kind === 'vllm' && version !== '0.8.5';
try {
  const r = await client.responses.create({ model: 'qwen', input: 'hello', max_output_tokens: 50 });
  check(servesResponses, 'responses served by an engine that does not have them');
  check(r.output_text.length > 0 && r.status === 'completed' && r.usage.output_tokens === 9, `response ${JSON.stringify(r)}`);
  let deltas = '';
  let completed = null;
  for await (const ev of await client.responses.create({ model: 'qwen', input: 'hello', stream: true })) {
    if (ev.type === 'response.output_text.delta') deltas += ev.delta;
    if (ev.type === 'response.completed') completed = ev.response;
  }
  check(deltas === r.output_text && completed?.output?.[0]?.content?.[0]?.text === r.output_text, `responses stream ${JSON.stringify(deltas)} / ${JSON.stringify(completed)}`);
} catch (e) {
  check(!servesResponses && e.status === 404, `responses: ${e}`);
}

if (failures.length) {
  console.error(failures.join('\n'));
  process.exit(1);
}
console.log('ok');
