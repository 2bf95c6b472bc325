package model

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gorun-hpc/gorun/internal/testfiles"
	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/quant"
)

// A quantized KV row holds ggml's blocks (quant's reference quantizer reads them back), and the
// direct dot and axpy over any head-sized range of it equal those over the dequantized row.
func TestKVQuantRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []kvType{kvQ8_0, kvQ4_0} {
		gt := map[kvType]gguf.Type{kvQ8_0: gguf.Q8_0, kvQ4_0: gguf.Q4_0}[typ]
		const width = 96
		b := newKVBuf(typ, 3, width)
		x := make([]float32, width)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		b.store(1, x)
		want := make([]float32, width)
		if err := quant.Dequantize(gt, b.q[b.rb:2*b.rb], want); err != nil {
			t.Fatal(err)
		}
		var maxErr float64
		for i := range x {
			maxErr = max(maxErr, math.Abs(float64(x[i]-want[i])))
		}
		// Q8_0 keeps ~1/254 of a block's largest magnitude, Q4_0 ~1/16.
		if lim := map[kvType]float64{kvQ8_0: 0.03, kvQ4_0: 0.5}[typ]; maxErr > lim {
			t.Errorf("%s: round trip error %g > %g", typ, maxErr, lim)
		}
		for _, r := range [][2]int{{0, 8}, {8, 8}, {24, 16}, {32, 32}, {16, 64}, {0, 96}} {
			off, n := r[0], r[1]
			q := x[:n]
			var d float64
			for i := range q {
				d += float64(q[i]) * float64(want[off+i])
			}
			got := dotQ(typ, b.q[b.rb:2*b.rb], off, q)
			if math.Abs(float64(got)-d) > 1e-4*(1+math.Abs(d)) {
				t.Errorf("%s: dot at %d+%d = %g, want %g", typ, off, n, got, d)
			}
			out := make([]float32, n)
			axpyQ(typ, out, 0.5, b.q[b.rb:2*b.rb], off)
			for i := range out {
				if math.Abs(float64(out[i]-0.5*want[off+i])) > 1e-6 {
					t.Fatalf("%s: axpy at %d+%d: element %d = %g, want %g", typ, off, n, i, out[i], 0.5*want[off+i])
				}
			}
		}
	}
	if err := kvQ8_0.checkWidth(48); err == nil {
		t.Error("a 48-wide row accepted for q8_0")
	}
	if _, err := parseKVType("q5_1"); err == nil {
		t.Error("KV type q5_1 accepted")
	}
}

// On stories260K a Q8_0 KV cache decodes the F16 cache's greedy tokens for 64 steps, in half
// the memory; a Q4_0 cache takes 9/32 of it (its tokens are reported, not asserted: 4-bit keys
// move the scores enough to change close choices).
func TestKVQuantGreedy(t *testing.T) {
	const steps = 64
	path := testfiles.Path(t, "llm", "stories260K.gguf")
	prompts := [][]int32{}
	for _, r := range loadRef(t)[0].Results {
		prompts = append(prompts, r.PromptIDs)
	}
	run := func(kt, vt string) ([][]int32, int64) {
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		m, err := Load(f, Options{Context: 256, KVType: kt, VType: vt})
		if err != nil {
			t.Fatal(err)
		}
		var out [][]int32
		for _, p := range prompts {
			m.Reset()
			ids, _, err := greedy(m, p, steps)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, ids)
		}
		return out, m.KVBytesPerToken()
	}
	ref, f16Bytes := run("f16", "")
	for _, c := range []struct {
		k, v  string
		exact bool
		ratio float64
	}{{"q8_0", "", true, 34.0 / 64}, {"q8_0", "f16", true, (34.0/64 + 1) / 2}, {"q4_0", "", false, 18.0 / 64}} {
		got, b := run(c.k, c.v)
		if r := float64(b) / float64(f16Bytes); math.Abs(r-c.ratio) > 1e-9 {
			t.Errorf("K %s V %s: %d KV bytes per token, %.4f of f16's %d, want %.4f", c.k, c.v, b, r, f16Bytes, c.ratio)
		}
		for i := range ref {
			same := 0
			for same < len(ref[i]) && same < len(got[i]) && ref[i][same] == got[i][same] {
				same++
			}
			t.Logf("K %s V %s: prompt %d: %d of %d greedy tokens equal f16's; %d KV bytes per token (f16 %d)", c.k, c.v, i, same, len(ref[i]), b, f16Bytes)
			if c.exact && (same < steps || len(got[i]) != len(ref[i])) {
				t.Errorf("K %s V %s: prompt %d diverges from f16 at token %d:\n got %v\n f16 %v", c.k, c.v, i, same, got[i], ref[i])
			}
		}
	}
}

// ForwardBatch over a quantized Cache (two sequences in two slots, prompts fed in chunks)
// decodes what Forward decodes over the same cache type, and a block saved from one slot and
// loaded into another continues there as it would have in the first.
func TestKVQuantBatchAndBlocks(t *testing.T) {
	// stories260K's heads of 8 lie inside blocks; the synthetic tiny shape's of 32 are blocks.
	syn := filepath.Join(t.TempDir(), "tiny.gguf")
	fh, err := os.Create(syn)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteSynthetic(fh, Shapes["tiny"], gguf.Q8_0, 5, nil); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	for _, path := range []string{testfiles.Path(t, "llm", "stories260K.gguf"), syn} {
		kvQuantBatch(t, path)
	}
}

func kvQuantBatch(t *testing.T, path string) {
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	prompt := loadRef(t)[0].Results[0].PromptIDs
	const n = 16
	for _, kt := range []string{"q8_0", "q4_0"} {
		m, err := Load(f, Options{Context: 128, KVType: kt})
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := greedy(m, prompt, n)
		if err != nil {
			t.Fatal(err)
		}
		c, err := m.NewCache(3, 128)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := c.SlotBytes(), 128*m.KVBytesPerToken(); got != want {
			t.Errorf("%s: slot bytes %d, want %d", kt, got, want)
		}
		half := len(prompt) / 2
		seqs := []Seq{{Slot: 0, Pos: 0, Tokens: prompt[:half]}, {Slot: 2, Pos: 0, Tokens: prompt, Logits: true}}
		if err := m.ForwardBatch(c, seqs); err != nil {
			t.Fatal(err)
		}
		// Slot 1 takes slot 2's first half as a saved block, then feeds the rest itself.
		blk, err := m.SaveKV(c, 2, 0, half)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.LoadKV(c, 1, 0, blk); err != nil {
			t.Fatal(err)
		}
		ids, err := m.BatchArgmax(c)
		if err != nil {
			t.Fatal(err)
		}
		got := [][]int32{nil, nil}
		got[1] = append(got[1], ids[0])
		if err := m.ForwardBatch(c, []Seq{{Slot: 0, Pos: half, Tokens: prompt[half:], Logits: true}, {Slot: 1, Pos: half, Tokens: prompt[half:], Logits: true}}); err != nil {
			t.Fatal(err)
		}
		ids, _ = m.BatchArgmax(c)
		got[0] = append(got[0], ids[0])
		got = append(got, []int32{ids[1]})
		pos := []int{len(prompt), len(prompt), len(prompt)}
		slotOf := []int{0, 2, 1}
		for len(got[0]) < n {
			var s []Seq
			for i, g := range got {
				s = append(s, Seq{Slot: slotOf[i], Pos: pos[i], Tokens: g[len(g)-1:], Logits: true})
				pos[i]++
			}
			if err := m.ForwardBatch(c, s); err != nil {
				t.Fatal(err)
			}
			ids, err := m.BatchArgmax(c)
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				got[i] = append(got[i], ids[i])
			}
		}
		for i, g := range got {
			if len(g) > n {
				g = g[:n]
			}
			for j := range g {
				if g[j] != want[j] {
					t.Errorf("%s %s: sequence %d (slot %d): batched %v, Forward %v", filepath.Base(path), kt, i, slotOf[i], g, want)
					break
				}
			}
		}
	}
}

// attendKV over quantized caches equals attention over the dequantized rows (to the Q8_0
// rounding of the query where heads are whole blocks), for heads of 32 and 64 elements at
// block-aligned offsets (the SIMD path) and of 8 (inside blocks).
func TestAttendKVQuant(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const rows, width = 40, 128
	for _, typ := range []kvType{kvQ8_0, kvQ4_0} {
		gt := map[kvType]gguf.Type{kvQ8_0: gguf.Q8_0, kvQ4_0: gguf.Q4_0}[typ]
		k, v := newKVBuf(typ, rows, width), newKVBuf(typ, rows, width)
		kf, vf := newKVBuf(kvF32, rows, width), newKVBuf(kvF32, rows, width)
		x := make([]float32, width)
		for r := 0; r < rows; r++ {
			for _, b := range []*kvBuf{&k, &v} {
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				b.store(r, x)
			}
			quant.Dequantize(gt, k.q[r*k.rb:(r+1)*k.rb], kf.f32[r*width:(r+1)*width])
			quant.Dequantize(gt, v.q[r*v.rb:(r+1)*v.rb], vf.f32[r*width:(r+1)*width])
		}
		for _, h := range [][2]int{{0, 32}, {64, 64}, {96, 32}, {8, 8}, {120, 8}} {
			off, hd := h[0], h[1]
			q := make([]float32, hd)
			for i := range q {
				q[i] = float32(rng.NormFloat64())
			}
			got, want := make([]float32, hd), make([]float32, hd)
			sc := make([]float32, rows)
			scale := float32(1 / math.Sqrt(float64(hd)))
			attendKV(got, q, &k, &v, off, rows, sc, scale)
			attendKV(want, q, &kf, &vf, off, rows, sc, scale)
			var d float64
			for i := range got {
				d = max(d, math.Abs(float64(got[i]-want[i])))
			}
			// The query's Q8_0 rounding moves the scores by ~1e-2 of their size.
			if d > 0.05 || hd == 8 && d > 1e-4 {
				t.Errorf("%s head %d+%d: differs from the dequantized attention by %g", typ, off, hd, d)
			}
		}
	}
}

// A q8_0 latent row is rounded as ggml's quantize_row_q8_0 rounds a product's input (the
// scale 127/amax, ties to even), not as its reference quantizer (1/(amax/127), round half
// away), and the rotary tail is kept as F32: for a latent element at exactly half the block's
// maximum, x·127/amax is 63.5 and the two quantizers can disagree (the latent of the upcycled
// deepseek2 files has such elements; llama.cpp rounds it with the former for attn_kv_b).
func TestLatentQ8RowRounding(t *testing.T) {
	// a block maximum for which the reference scale puts the element at half of it below the tie
	var amax float32
	for k := 0; k < 1<<16 && amax == 0; k++ {
		a := 1 + float32(k)/(1<<16)
		if h := a / 2; h*(127/a) == 63.5 && h*(1/(a/127)) < 63.5 {
			amax = a
		}
	}
	if amax == 0 {
		t.Fatal("no block maximum with differing scales found")
	}
	x := make([]float32, 64+8)
	for i := range x {
		x[i] = float32(i%7)*0.01 - 0.03
	}
	x[32+3], x[32+9] = amax, amax/2
	x[64+5] = 1.2345678
	b := newKVBufSplit(kvQ8_0, 2, len(x), 64)
	b.store(1, x)
	row := b.q[b.rb:]
	if got := int8(row[34+2+9]); got != 64 {
		t.Errorf("x = amax/2 stored as %d, want 64 (63.5 rounded to even)", got)
	}
	ref := make([]byte, 34)
	if err := quant.Quantize(gguf.Q8_0, x[32:64], ref); err != nil {
		t.Fatal(err)
	}
	if int8(ref[2+9]) != 63 {
		t.Errorf("amax %v: the reference quantizer gives %d, want 63 (the case this test is about)", amax, int8(ref[2+9]))
	}
	for j := 0; j < 8; j++ {
		if got := math.Float32frombits(uint32(row[68+4*j]) | uint32(row[69+4*j])<<8 | uint32(row[70+4*j])<<16 | uint32(row[71+4*j])<<24); got != x[64+j] {
			t.Errorf("rotary value %d stored as %v, want %v", j, got, x[64+j])
		}
	}
}
