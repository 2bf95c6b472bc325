package serve

import (
	"encoding/json"
	"fmt"
	"testing"
)

type cachedUsage struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage struct {
		Prompt  int `json:"prompt_tokens"`
		Details struct {
			Cached int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// A second turn that shares the first's history reuses its KV cache: usage reports the cached
// tokens, and the reply equals that of a server without the cache.
func TestPromptCache(t *testing.T) {
	for _, ranks := range []int{1, 2} {
		t.Run(fmt.Sprintf("TP=%d", ranks), func(t *testing.T) {
			on := startServer(t, serverOpts{ranks: ranks, ctx: 512, cfg: Config{Slots: 2}})
			off := startServer(t, serverOpts{ranks: ranks, ctx: 512, cfg: Config{Slots: 2, NoPromptCache: true}})
			ask := func(ts *testServer, msgs []Message) cachedUsage {
				wire := make([]any, len(msgs))
				for i, m := range msgs {
					wire[i] = map[string]any{"role": m.Role, "content": m.Content}
				}
				code, _, body := ts.post(t, "/v1/chat/completions", map[string]any{"messages": wire, "max_tokens": 24, "temperature": 0})
				var r cachedUsage
				if code != 200 || json.Unmarshal(body, &r) != nil {
					t.Fatalf("%d %s", code, body)
				}
				return r
			}
			turn1 := []Message{{"system", "You tell stories."}, {"user", "Tell me about a dog."}}
			a := ask(on, turn1)
			if a.Usage.Details.Cached != 0 {
				t.Errorf("first request: %d cached tokens", a.Usage.Details.Cached)
			}
			// An unrelated request in between, into the other slot.
			ask(on, []Message{{"user", "Once there was a frog."}})
			turn2 := append(turn1, Message{"assistant", a.Choices[0].Message.Content}, Message{"user", "And a cat?"})
			b := ask(on, turn2)
			ref := ask(off, turn2)
			p1, p2 := chatPrompt(t, on, turn1), chatPrompt(t, on, turn2)
			if lo := commonPrefix(p1, p2); b.Usage.Details.Cached < lo || b.Usage.Details.Cached >= len(p2) {
				t.Errorf("second turn: %d cached of %d prompt tokens; want at least the %d shared with the first prompt", b.Usage.Details.Cached, len(p2), lo)
			}
			if b.Choices[0].Message.Content != ref.Choices[0].Message.Content || ref.Usage.Details.Cached != 0 || b.Usage.Prompt != len(p2) {
				t.Errorf("with the cache %q (%d cached), without %q (%d cached)", b.Choices[0].Message.Content, b.Usage.Details.Cached,
					ref.Choices[0].Message.Content, ref.Usage.Details.Cached)
			}
			// The same request again: everything but the last prompt token is cached.
			c := ask(on, turn2)
			if c.Usage.Details.Cached != len(p2)-1 || c.Choices[0].Message.Content != ref.Choices[0].Message.Content {
				t.Errorf("repeat: %d cached of %d, %q", c.Usage.Details.Cached, len(p2), c.Choices[0].Message.Content)
			}
			t.Logf("turn 2: %d of %d prompt tokens cached", b.Usage.Details.Cached, len(p2))
		})
	}
}
