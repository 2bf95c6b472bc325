// The chat page: keeps the conversation, sends it to /v1/chat/completions with stream: true
// and appends the streamed deltas to the answer as they arrive. When the server wants an API
// key (401), the page asks for it and keeps it for this tab only (sessionStorage).
"use strict";
const $ = (id) => document.getElementById(id);
let history = [];
let model = "model";
let busy = false;
let apiKey = sessionStorage.getItem("apiKey") || "";

function headers() {
  const h = { "Content-Type": "application/json" };
  if (apiKey) h.Authorization = "Bearer " + apiKey;
  return h;
}

function loadModels() {
  fetch("/v1/models", { headers: headers() }).then(async (r) => {
    if (r.status === 401) {
      $("keyform").hidden = false;
      $("model").textContent = apiKey ? "wrong API key" : "this server wants an API key";
      return;
    }
    const j = await r.json();
    $("keyform").hidden = true;
    model = j.data[0].id;
    const m = j.data[0].meta || {};
    $("model").textContent = `${model} (TP=${m.tensor_parallel}, ${m.slots} slots, template ${m.chat_template})`;
  }).catch((e) => { $("model").textContent = "model list failed: " + e; });
}
loadModels();

$("keyform").addEventListener("submit", (ev) => {
  ev.preventDefault();
  apiKey = $("apikey").value.trim();
  sessionStorage.setItem("apiKey", apiKey);
  loadModels();
});

function bubble(role, text) {
  const div = document.createElement("div");
  div.className = "msg " + role;
  div.textContent = text;
  $("messages").appendChild(div);
  $("messages").scrollTop = $("messages").scrollHeight;
  return div;
}

// request builds the API request; an empty max tokens field lets the answer fill the context.
function request() {
  const req = { model, messages: history, stream: true, temperature: Number($("temperature").value) };
  const max = $("max_tokens").value.trim();
  if (max !== "") req.max_tokens = Number(max);
  return req;
}

async function ask(question) {
  busy = true;
  $("send").disabled = true;
  history.push({ role: "user", content: question });
  bubble("user", question);
  const out = bubble("assistant", "");
  out.dataset.done = "0";
  let answer = "";
  try {
    const res = await fetch("/v1/chat/completions", {
      method: "POST",
      headers: headers(),
      body: JSON.stringify(request()),
    });
    if (!res.ok) {
      const j = await res.json().catch(() => ({}));
      throw new Error((j.error && j.error.message) || res.statusText);
    }
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let nl;
      while ((nl = buf.indexOf("\n\n")) >= 0) {
        const event = buf.slice(0, nl);
        buf = buf.slice(nl + 2);
        for (const line of event.split("\n")) {
          if (!line.startsWith("data:")) continue;
          const data = line.slice(5).trim();
          if (data === "[DONE]") continue;
          const j = JSON.parse(data);
          if (j.error) throw new Error(j.error.message);
          const delta = j.choices[0].delta || {};
          if (delta.content) {
            answer += delta.content;
            out.textContent = answer;
            $("messages").scrollTop = $("messages").scrollHeight;
          }
          if (j.usage) $("status").textContent = `${j.usage.completion_tokens} tokens`;
        }
      }
    }
    history.push({ role: "assistant", content: answer });
  } catch (e) {
    out.classList.add("error");
    out.textContent = answer + "\n[error: " + e.message + "]";
    history.pop();
  } finally {
    out.dataset.done = "1";
    busy = false;
    $("send").disabled = false;
  }
}

$("form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const q = $("input").value.trim();
  if (!q || busy) return;
  $("input").value = "";
  ask(q);
});
$("input").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey) {
    ev.preventDefault();
    $("form").requestSubmit();
  }
});
$("clear").addEventListener("click", () => {
  history = [];
  $("messages").textContent = "";
});
