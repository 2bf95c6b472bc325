package serve

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

// The index finds blocks only under their exact prefix, queues a save for each new block and a
// load for each block a prompt reuses, and evicts the least recently used leaf under its budget.
func TestPrefixCacheIndex(t *testing.T) {
	const B = 4
	seq := func(start, n int) []int32 {
		s := make([]int32, n)
		for i := range s {
			s[i] = int32(start + i)
		}
		return s
	}
	c := newPrefixCache(5*B*10, 10, B) // room for 5 blocks
	a := seq(0, 3*B+2)                 // 3 full blocks
	c.insert(a, 1)
	ops := c.take()
	want := []int32{blockSave, 0, 1, 0, B, blockSave, 1, 1, B, B, blockSave, 2, 1, 2 * B, B}
	if !slices.Equal(ops, want) {
		t.Fatalf("insert: ops %v, want %v", ops, want)
	}
	// A prompt sharing two blocks and then differing matches two.
	p := append(seq(0, 2*B), 99, 98, 97, 96, 95)
	if m := c.match(p); len(m) != 2 || m[0].id != 0 || m[1].id != 1 {
		t.Fatalf("match: %d blocks", len(m))
	}
	// The same tokens at another offset are another prefix: no match.
	if m := c.match(seq(B, 3*B)); len(m) != 0 {
		t.Fatalf("match of a shifted prompt: %d blocks", len(m))
	}
	c.load(c.match(a), 1, 3)
	if ops, want := c.take(), []int32{blockLoad, 1, 3, B, B, blockLoad, 2, 3, 2 * B, B}; !slices.Equal(ops, want) {
		t.Fatalf("load: ops %v, want %v", ops, want)
	}
	// A second chain of 3 blocks overflows the budget of 5: the least recently used leaf
	// (block 2, the end of a) goes first.
	b := seq(100, 3*B)
	c.insert(b, 0)
	ops = c.take()
	want = []int32{blockSave, 3, 0, 0, B, blockSave, 4, 0, B, B, blockDrop, 2, 0, 0, 0, blockSave, 5, 0, 2 * B, B}
	if !slices.Equal(ops, want) {
		t.Fatalf("insert over budget: ops %v, want %v", ops, want)
	}
	if c.bytes() != 5*B*10 || c.lru.Len() != 5 {
		t.Fatalf("%d bytes in %d blocks", c.bytes(), c.lru.Len())
	}
	if m := c.match(a); len(m) != 2 {
		t.Fatalf("after eviction a matches %d blocks, want 2", len(m))
	}
	// A chain longer than the whole budget keeps what fits and never evicts its own blocks.
	c2 := newPrefixCache(2*B*10, 10, B)
	c2.insert(seq(0, 5*B), 0)
	if m := c2.match(seq(0, 5*B)); len(m) != 2 || c2.evictions != 0 {
		t.Fatalf("long chain: %d blocks kept, %d evictions", len(m), c2.evictions)
	}
}

// Blocks of an earlier request are reused from another slot once the slot that served it has
// moved on: usage counts them, the reply is the uncached server's, at TP = 1 and 2 and for the
// Q8_0 cache; /metrics counts them and the per-slot KV memory.
func TestPrefixCacheAcrossSlots(t *testing.T) {
	for _, c := range []struct {
		ranks int
		kv    string
	}{{1, ""}, {2, ""}, {1, "q8_0"}} {
		t.Run(fmt.Sprintf("TP=%d/kv=%s", c.ranks, c.kv), func(t *testing.T) {
			on := startServer(t, serverOpts{ranks: c.ranks, ctx: 512, kv: c.kv, cfg: Config{Slots: 2, Metrics: true}})
			off := startServer(t, serverOpts{ranks: c.ranks, ctx: 512, kv: c.kv, cfg: Config{Slots: 2, NoPromptCache: true}})
			ask := func(ts *testServer, msgs []Message) cachedUsage {
				wire := make([]any, len(msgs))
				for i, m := range msgs {
					wire[i] = map[string]any{"role": m.Role, "content": m.Content}
				}
				code, _, body := ts.post(t, "/v1/chat/completions", map[string]any{"messages": wire, "max_tokens": 16, "temperature": 0})
				var r cachedUsage
				if code != 200 || json.Unmarshal(body, &r) != nil {
					t.Fatalf("%d %s", code, body)
				}
				return r
			}
			long := []Message{{"system", "You tell long stories about animals who live in the forest and go on adventures together."},
				{"user", "Tell me about a dog who met a big brown bear near the river one sunny morning."}}
			a := ask(on, long)
			// Two unrelated requests take both slots in turn, overwriting a's slot.
			ask(on, []Message{{"user", "Once there was a frog."}})
			ask(on, []Message{{"user", "A girl had a red ball."}})
			next := append(long, Message{"assistant", a.Choices[0].Message.Content}, Message{"user", "And then?"})
			got, ref := ask(on, next), ask(off, next)
			pa := chatPrompt(t, on, long)
			full := len(pa) / prefixBlock * prefixBlock
			if got.Usage.Details.Cached < full || got.Choices[0].Message.Content != ref.Choices[0].Message.Content {
				t.Errorf("%d cached (want >= %d, the full blocks of the first prompt of %d), reply %q, uncached %q",
					got.Usage.Details.Cached, full, len(pa), got.Choices[0].Message.Content, ref.Choices[0].Message.Content)
			}
			code, body := on.get(t, "/metrics")
			if code != 200 {
				t.Fatalf("/metrics: %d", code)
			}
			num := func(re string) float64 {
				m := regexp.MustCompile(`(?m)^` + re + ` (\S+)`).FindSubmatch(body)
				if m == nil {
					t.Fatalf("/metrics lacks %s", re)
				}
				v, _ := strconv.ParseFloat(string(m[1]), 64)
				return v
			}
			// The slot part is the chat template's header, shared with the slot's last request.
			blocks, slot := num(`gorun_llm_prompt_cached_tokens_total\{source="blocks"\}`), num(`gorun_llm_prompt_cached_tokens_total\{source="slot"\}`)
			if blocks < float64(full)-slot || blocks+slot < float64(got.Usage.Details.Cached) {
				t.Errorf("cached token counters: blocks %g, slot %g; want blocks >= %d - slot", blocks, slot, full)
			}
			if v := num(`gorun_llm_prefix_cache_blocks`); v < float64(full/prefixBlock) {
				t.Errorf("%g blocks cached", v)
			}
			kt := c.kv
			if kt == "" {
				kt = "f16"
			}
			wantSlot := float64(512 * on.srv.m.KVBytesPerToken())
			if v := num(`gorun_llm_kv_cache_slot_bytes\{type_k="` + kt + `",type_v="` + kt + `"\}`); v != wantSlot {
				t.Errorf("slot bytes %g, want %g", v, wantSlot)
			}
			t.Logf("%d of %d prompt tokens cached", got.Usage.Details.Cached, got.Usage.Prompt)
		})
	}
}
