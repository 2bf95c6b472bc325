#!/usr/bin/env bash
# llm serve end to end, with real clients, against `gorun -n 2 llm serve --api-key-file` on the
# real TinyStories model (about 30 s, most of it installing chromium and the openai npm package):
#  - the official `openai` npm package (installed into a temporary folder) with the right
#    apiKey: models list, chat completion, streamed chat (plain iteration and the .stream()
#    helper), text completion equal to llama.cpp's greedy text, and an OpenAI error for
#    max_tokens beyond the context; logprobs/top_logprobs (whole and streamed, chat and legacy
#    completions); n = 3 choices with a seed; a json_schema response validated by Ajv, and a
#    400 for a schema the output grammar cannot express; with a wrong apiKey: AuthenticationError (401);
#  - the official `@anthropic-ai/sdk` package against /v1/messages: the same text as the chat
#    completion of the same conversation, whole and streamed (the SDK's text events and raw
#    event iteration), and a BadRequestError for a conversation that does not end with the user;
#  - the chat page in headless Chromium (Debian's package): the API key typed in, a question
#    sent, the streamed answer in the page (TestChatPageInBrowser pointed at this server);
#  - a rank killed: gorun exits non-zero, naming it;
#  - `llm serve --tls-cert --tls-key` with GORUN_API_KEY: the openai client over HTTPS, trusting
#    a self-signed certificate (Go's crypto/tls/generate_cert.go) through NODE_EXTRA_CA_CERTS;
#    with it (-c 2048), a tool-call round trip: parallel calls forced by tool_choice required,
#    arguments validated by Ajv, the streamed deltas assembled by the client's .stream()
#    helper, role tool results fed back, 400 for an unknown function; and the same through
#    @anthropic-ai/sdk on /v1/messages (tool_choice any, tool_use blocks validated by Ajv, the
#    stream helper's blocks from input_json_delta events, tool_result blocks fed back, a
#    BadRequestError for an unknown tool).
# Skipped when ../shared/testdata is absent.
set -euo pipefail
cd "$(dirname "$0")/../.."
model=../shared/testdata/llm/stories260K.gguf
if [ ! -f "$model" ]; then
	echo "45-serve: $model absent, skipped"
	exit 0
fi
flock /tmp/apt.lock apt-get install -y -qq chromium >/dev/null
tmp=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/llm" ./cmd/llm
go build -o "$tmp/gorun" ./cmd/gorun

# start CMD...: runs a server in the background, its stderr in $tmp/serve.log, and sets $url.
start() {
	"$@" 2>"$tmp/serve.log" &
	pid=$!
	for _ in $(seq 100); do
		url=$(sed -n 's/.* on \(https\{0,1\}:\/\/[0-9.:]*\)$/\1/p' "$tmp/serve.log")
		[ -n "$url" ] && return 0
		sleep 0.1
	done
	echo "45-serve: the server did not start:" >&2
	cat "$tmp/serve.log" >&2
	exit 1
}
key=sk-ci-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
(umask 077 && echo "$key" >"$tmp/key")
start "$tmp/gorun" -n 2 "$tmp/llm" serve -m "$model" --port 0 --parallel 4 --api-key-file "$tmp/key"
echo "45-serve: gorun -n 2 llm serve at $url"
health=$(curl -s -o /dev/null -w '%{http_code}' "$url/health")
models=$(curl -s -o /dev/null -w '%{http_code}' "$url/v1/models")
if ! grep -q "require the API key from --api-key-file" "$tmp/serve.log" || [ "$health" != 200 ] || [ "$models" != 401 ]; then
	echo "45-serve: with --api-key-file, /health answered $health (want 200), /v1/models without the key $models (want 401):" >&2
	cat "$tmp/serve.log" >&2
	exit 1
fi

(cd "$tmp" && npm init -y >/dev/null && npm install --no-audit --no-fund --silent openai ajv @anthropic-ai/sdk >/dev/null)
cat >"$tmp/client.mjs" <<'JS'
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Ajv from 'ajv';
const client = new OpenAI({ baseURL: `${process.argv[2]}/v1`, apiKey: process.argv[3], maxRetries: 0 });

// A wrong key: OpenAI's AuthenticationError, for the model list and for a completion.
const stranger = new OpenAI({ baseURL: `${process.argv[2]}/v1`, apiKey: 'sk-wrong', maxRetries: 0 });
for (const call of [() => stranger.models.list(), () => stranger.chat.completions.create({ model: 'stories260K', messages: [{ role: 'user', content: 'hi' }] })]) {
	await assert.rejects(call(), (err) => {
		assert.ok(err instanceof OpenAI.AuthenticationError, `${err}`);
		assert.equal(err.status, 401);
		assert.equal(err.code, 'invalid_api_key');
		assert.equal(err.type, 'invalid_request_error');
		return true;
	});
}

const models = await client.models.list();
assert.equal(models.data.length, 1);
assert.equal(models.data[0].id, 'stories260K');
assert.equal((await client.models.retrieve('stories260K')).id, 'stories260K');

const messages = [{ role: 'user', content: 'Tell me a story about a dog.' }];
const chat = await client.chat.completions.create({ model: 'stories260K', messages, temperature: 0, max_tokens: 40 });
const answer = chat.choices[0].message.content;
assert.equal(chat.choices[0].message.role, 'assistant');
assert.ok(answer.length > 20, `short answer ${JSON.stringify(answer)}`);
assert.equal(chat.usage.completion_tokens, 40);
assert.equal(chat.choices[0].finish_reason, 'length');

let streamed = '';
const stream = await client.chat.completions.create({ model: 'stories260K', messages, temperature: 0, max_tokens: 40, stream: true });
let chunks = 0;
for await (const chunk of stream) {
	streamed += chunk.choices[0]?.delta?.content ?? '';
	chunks++;
}
assert.equal(streamed, answer);
assert.ok(chunks > 10, `${chunks} chunks`);

const runner = client.chat.completions.stream({ model: 'stories260K', messages, temperature: 0, max_tokens: 40 });
const final = await runner.finalChatCompletion();
assert.equal(final.choices[0].message.content, answer);

const text = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 32, temperature: 0 });
assert.equal(text.choices[0].text, ', there was a little girl named Lily. She loved to play outside in the park. One day, she saw');

// logprobs: one entry per token, the greedy token first among its alternatives, the
// alternatives in order; streamed, the same entries. (TestLogprobs checks the values against a
// float64 log-softmax of the model's logits.)
const lp = await client.chat.completions.create({ model: 'stories260K', messages, temperature: 0, max_tokens: 12, logprobs: true, top_logprobs: 4 });
const content = lp.choices[0].logprobs.content;
assert.equal(content.length, 12);
for (const e of content) {
	assert.equal(e.top_logprobs.length, 4);
	assert.ok(e.logprob <= 0 && Math.abs(e.logprob - e.top_logprobs[0].logprob) < 1e-9, JSON.stringify(e));
	assert.equal(e.token, e.top_logprobs[0].token);
	for (let k = 1; k < 4; k++) assert.ok(e.top_logprobs[k].logprob <= e.top_logprobs[k - 1].logprob);
}
assert.equal(content.map((e) => Buffer.from(e.bytes).toString()).join('').trimStart(), lp.choices[0].message.content);
const lpStream = await client.chat.completions.create({ model: 'stories260K', messages, temperature: 0, max_tokens: 12, logprobs: true, top_logprobs: 4, stream: true });
const lpStreamed = [];
for await (const chunk of lpStream) lpStreamed.push(...(chunk.choices[0]?.logprobs?.content ?? []));
assert.deepEqual(lpStreamed, content);
const legacy = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 8, temperature: 0, logprobs: 3 });
assert.equal(legacy.choices[0].logprobs.tokens.join(''), legacy.choices[0].text);
assert.equal(legacy.choices[0].logprobs.token_logprobs.length, 8);

// json_schema (strict): constrained decoding makes even stories260K's output parse and
// validate (Ajv), greedy and sampled; a schema the grammar cannot express is a 400.
const schema = {
	type: 'object', additionalProperties: false, required: ['name', 'age', 'pet', 'happy', 'friends'],
	properties: {
		name: { type: 'string', maxLength: 8 }, age: { type: 'integer' }, pet: { enum: ['cat', 'dog', 'bird'] },
		happy: { type: 'boolean' }, friends: { type: 'array', items: { type: 'string', maxLength: 6 }, maxItems: 2 },
	},
};
const validateStory = new Ajv().compile(schema);
const response_format = { type: 'json_schema', json_schema: { name: 'story', strict: true, schema } };
for (const temperature of [0, 1]) {
	const js = await client.chat.completions.create({ model: 'stories260K', messages: [{ role: 'user', content: 'A cat.' }], temperature, seed: 9, max_tokens: 100, response_format });
	const out = JSON.parse(js.choices[0].message.content);
	assert.ok(validateStory(out), `${js.choices[0].message.content}: ${JSON.stringify(validateStory.errors)}`);
	assert.equal(js.choices[0].finish_reason, 'stop');
	console.log(`json_schema, temperature ${temperature}: ${js.choices[0].message.content} (${js.usage.completion_tokens} tokens)`);
}
await assert.rejects(client.chat.completions.create({ model: 'stories260K', messages,
	response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', pattern: '^a+$' } } } }), (err) => {
	assert.equal(err.status, 400);
	assert.equal(err.param, 'response_format.json_schema.schema');
	assert.match(err.message, /pattern/);
	return true;
});

// n choices with a seed: choice i is what seed + i gives alone.
const many = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 16, temperature: 1, seed: 5, n: 3 });
assert.equal(many.choices.length, 3);
for (let i = 0; i < 3; i++) {
	const one = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 16, temperature: 1, seed: 5 + i });
	assert.equal(many.choices[i].index, i);
	assert.equal(many.choices[i].text, one.choices[0].text);
}

await assert.rejects(client.chat.completions.create({ model: 'stories260K', messages, max_tokens: 100000 }), (err) => {
	assert.equal(err.status, 400);
	assert.equal(err.code, 'context_length_exceeded');
	return true;
});
console.log(`openai client: ok (answer ${JSON.stringify(answer)}; a wrong key: AuthenticationError 401)`);
JS
node "$tmp/client.mjs" "$url" "$key"

cat >"$tmp/anthropic.mjs" <<'JS'
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
const anthropic = new Anthropic({ baseURL: process.argv[2], apiKey: process.argv[3], maxRetries: 0 });
const openai = new OpenAI({ baseURL: `${process.argv[2]}/v1`, apiKey: process.argv[3], maxRetries: 0 });
const question = 'Tell me a story about a dog.';
// The reference: the same conversation through chat completions, greedy.
const ref = await openai.chat.completions.create({ model: 'stories260K', messages: [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: question }], temperature: 0, max_tokens: 30 });
const want = ref.choices[0].message.content;
const msg = await anthropic.messages.create({ model: 'stories260K', system: 'You tell stories.', max_tokens: 30, temperature: 0, messages: [{ role: 'user', content: question }] });
assert.equal(msg.type, 'message');
assert.equal(msg.role, 'assistant');
assert.equal(msg.content[0].type, 'text');
assert.equal(msg.content[0].text, want);
assert.equal(msg.stop_reason, 'max_tokens');
assert.equal(msg.usage.output_tokens, 30);
assert.equal(msg.usage.input_tokens, ref.usage.prompt_tokens);
// Streamed: the SDK's event helper collects the text and the final message.
const stream = anthropic.messages.stream({ model: 'stories260K', system: 'You tell stories.', max_tokens: 30, temperature: 0, messages: [{ role: 'user', content: question }] });
let deltas = '';
stream.on('text', (t) => { deltas += t; });
const final = await stream.finalMessage();
assert.equal(deltas, want);
assert.equal(final.content[0].text, want);
assert.equal(final.stop_reason, 'max_tokens');
// Raw iteration over the events.
const kinds = [];
for await (const ev of await anthropic.messages.create({ model: 'stories260K', max_tokens: 8, temperature: 0, stream: true, messages: [{ role: 'user', content: question }] })) {
	if (kinds.at(-1) !== ev.type) kinds.push(ev.type);
}
assert.deepEqual(kinds, ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
await assert.rejects(anthropic.messages.create({ model: 'stories260K', max_tokens: 8, messages: [{ role: 'assistant', content: 'x' }] }), (err) => {
	assert.ok(err instanceof Anthropic.BadRequestError, `${err}`);
	assert.equal(err.error.type, 'error');
	return true;
});
console.log(`anthropic client: ok (${JSON.stringify(want)})`);
JS
node "$tmp/anthropic.mjs" "$url" "$key"

GORUN_SERVE_URL=$url GORUN_SERVE_KEY=$key GORUN_REQUIRE_BROWSER=1 go test -count=1 -run TestChatPageInBrowser -v ./llm/serve | grep -E '^(---|ok|FAIL|\s+browser_test)'

# Kill rank 1: gorun must exit non-zero and name it.
rank1=
for child in $(pgrep -P "$pid"); do
	if tr '\0' '\n' <"/proc/$child/environ" | grep -qx GORUN_RANK=1; then
		rank1=$child
	fi
done
if [ -z "$rank1" ]; then
	echo "45-serve: rank 1 not found among gorun's children" >&2
	exit 1
fi
kill -KILL "$rank1"
rc=0
timeout 30 tail --pid="$pid" -f /dev/null || true
wait "$pid" || rc=$?
pid=
if [ "$rc" -eq 0 ] || ! grep -q "rank 1" "$tmp/serve.log"; then
	echo "45-serve: after rank 1 was killed gorun exited with $rc:" >&2
	cat "$tmp/serve.log" >&2
	exit 1
fi
echo "45-serve: rank 1 killed, gorun exited with $rc"

# HTTPS: a self-signed certificate for 127.0.0.1, trusted by node through NODE_EXTRA_CA_CERTS.
(cd "$tmp" && go run "$(go env GOROOT)/src/crypto/tls/generate_cert.go" --host 127.0.0.1 --ecdsa-curve P256 2>/dev/null)
GORUN_API_KEY=$key start "$tmp/llm" serve -m "$model" --port 0 -c 2048 --tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem"
case $url in https://*) ;; *) echo "45-serve: with --tls-cert the server is at $url" >&2; exit 1 ;; esac
cat >"$tmp/tls.mjs" <<'JS'
import assert from 'node:assert/strict';
import OpenAI from 'openai';
const client = new OpenAI({ baseURL: `${process.argv[2]}/v1`, apiKey: process.argv[3], maxRetries: 0 });
assert.equal((await client.models.list()).data[0].id, 'stories260K');
const text = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 32, temperature: 0 });
assert.equal(text.choices[0].text, ', there was a little girl named Lily. She loved to play outside in the park. One day, she saw');
await assert.rejects(new OpenAI({ baseURL: `${process.argv[2]}/v1`, apiKey: 'sk-wrong', maxRetries: 0 }).models.list(),
	(err) => err instanceof OpenAI.AuthenticationError);
console.log('openai client over TLS: ok');
JS
NODE_EXTRA_CA_CERTS=$tmp/cert.pem node "$tmp/tls.mjs" "$url" "$key"

# Tools need a longer context than the chat page's server has (-c 2048 here): the tool
# descriptions, the calls and their results are all in the prompt.
cat >"$tmp/tools.mjs" <<'JS'
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Ajv from 'ajv';
const client = new OpenAI({ baseURL: `${process.argv[2]}/v1`, apiKey: process.argv[3], maxRetries: 0 });
// Tool calls: tool_choice required makes stories260K call (in parallel), each call's arguments
// valid under its function's schema; the .stream() helper assembles the same calls from the
// streamed deltas; the results fed back as role tool messages; an unknown function is a 400.
const fnSchemas = {
	get_weather: { type: 'object', properties: { city: { type: 'string', maxLength: 12 }, unit: { enum: ['c', 'f'] } }, required: ['city', 'unit'], additionalProperties: false },
	get_time: { type: 'object', properties: { zone: { type: 'string', maxLength: 8 } }, required: ['zone'], additionalProperties: false },
};
const tools = Object.entries(fnSchemas).map(([name, parameters]) => ({ type: 'function', function: { name, description: `the ${name.slice(4)}`, parameters } }));
const question = { role: 'user', content: 'What is the weather in Paris?' };
const toolReq = { model: 'stories260K', messages: [question], tools, tool_choice: 'required', temperature: 1, seed: 1, max_tokens: 400 };
const called = await client.chat.completions.create(toolReq);
const calls = called.choices[0].message.tool_calls;
assert.equal(called.choices[0].finish_reason, 'tool_calls');
assert.ok(calls.length >= 2, `${calls.length} calls`);
for (const c of calls) {
	const check = new Ajv().compile(fnSchemas[c.function.name]);
	assert.ok(check(JSON.parse(c.function.arguments)), `${c.function.name}(${c.function.arguments}): ${JSON.stringify(check.errors)}`);
}
const toolStream = client.chat.completions.stream(toolReq);
const streamedCalls = (await toolStream.finalChatCompletion()).choices[0].message.tool_calls;
assert.deepEqual(streamedCalls.map((c) => c.function), calls.map((c) => c.function));
const results = calls.map((c) => ({ role: 'tool', tool_call_id: c.id, content: '{"result": "sunny"}' }));
const after = await client.chat.completions.create({ model: 'stories260K', messages: [question, called.choices[0].message, ...results], tools, temperature: 0, max_tokens: 16 });
assert.ok(after.choices[0].message.content.length > 0);
await assert.rejects(client.chat.completions.create({ ...toolReq, tool_choice: { type: 'function', function: { name: 'launch' } } }), (err) => {
	assert.equal(err.status, 400);
	assert.equal(err.param, 'tool_choice');
	return true;
});
console.log(`tool calls: ${calls.map((c) => `${c.function.name}(${c.function.arguments})`).join(', ')}`);
JS
NODE_EXTRA_CA_CERTS=$tmp/cert.pem node "$tmp/tools.mjs" "$url" "$key"
cat >"$tmp/anthropic-tools.mjs" <<'JS'
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import Ajv from 'ajv';
const anthropic = new Anthropic({ baseURL: process.argv[2], apiKey: process.argv[3], maxRetries: 0 });
// Tools on /v1/messages: tool_choice any makes stories260K answer with tool_use blocks whose
// input is valid under the tool's input_schema; the SDK's stream helper assembles the same
// blocks from input_json_delta events; tool_result blocks fed back; an unknown tool is a 400.
const schemas = {
	get_weather: { type: 'object', properties: { city: { type: 'string', maxLength: 12 }, unit: { enum: ['c', 'f'] } }, required: ['city', 'unit'], additionalProperties: false },
	get_time: { type: 'object', properties: { zone: { type: 'string', maxLength: 8 } }, required: ['zone'], additionalProperties: false },
};
const tools = Object.entries(schemas).map(([name, input_schema]) => ({ name, description: `the ${name.slice(4)}`, input_schema }));
const question = { role: 'user', content: 'What is the weather in Paris?' };
const req = { model: 'stories260K', max_tokens: 400, temperature: 0, messages: [question], tools, tool_choice: { type: 'any' } };
const msg = await anthropic.messages.create(req);
assert.equal(msg.stop_reason, 'tool_use');
const uses = msg.content.filter((b) => b.type === 'tool_use');
assert.ok(uses.length >= 1, JSON.stringify(msg.content));
for (const u of uses) {
	assert.match(u.id, /^toolu_/);
	const check = new Ajv().compile(schemas[u.name]);
	assert.ok(check(u.input), `${u.name}(${JSON.stringify(u.input)}): ${JSON.stringify(check.errors)}`);
}
const stream = anthropic.messages.stream(req);
let pieces = 0;
stream.on('inputJson', () => { pieces++; });
const final = await stream.finalMessage();
assert.equal(final.stop_reason, 'tool_use');
assert.deepEqual(final.content.filter((b) => b.type === 'tool_use').map((b) => [b.name, b.input]), uses.map((u) => [u.name, u.input]));
assert.ok(pieces >= uses.length, `${pieces} input_json_delta events`);
const results = { role: 'user', content: uses.map((u) => ({ type: 'tool_result', tool_use_id: u.id, content: '{"result": "sunny"}' })) };
const after = await anthropic.messages.create({ model: 'stories260K', max_tokens: 16, temperature: 0, tools, messages: [question, { role: 'assistant', content: msg.content }, results] });
assert.ok(after.content.length > 0);
await assert.rejects(anthropic.messages.create({ ...req, tool_choice: { type: 'tool', name: 'launch' } }), (err) => {
	assert.ok(err instanceof Anthropic.BadRequestError, `${err}`);
	assert.equal(err.error.error.type, 'invalid_request_error');
	return true;
});
console.log(`anthropic tool_use: ${uses.map((u) => `${u.name}(${JSON.stringify(u.input)})`).join(', ')} (streamed in ${pieces} input_json_delta events)`);
JS
NODE_EXTRA_CA_CERTS=$tmp/cert.pem node "$tmp/anthropic-tools.mjs" "$url" "$key"
kill "$pid"
wait "$pid" || true
pid=
echo "45-serve: ok"
