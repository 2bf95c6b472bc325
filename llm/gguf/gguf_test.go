package gguf

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gorun-hpc/gorun/internal/testfiles"
)

func TestStories260K(t *testing.T) {
	f, err := Open(testfiles.Path(t, "llm", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Version != 3 {
		t.Errorf("version %d, want 3", f.Version)
	}
	arch, err := f.String("general.architecture")
	if err != nil || arch != "llama" {
		t.Errorf("architecture %q %v", arch, err)
	}
	for key, want := range map[string]uint64{"llama.embedding_length": 64, "llama.block_count": 5,
		"llama.attention.head_count": 8, "llama.attention.head_count_kv": 4, "llama.feed_forward_length": 172} {
		if got, err := f.Uint(key); err != nil || got != want {
			t.Errorf("%s = %d (%v), want %d", key, got, err, want)
		}
	}
	toks, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil || len(toks) != 512 {
		t.Fatalf("tokens: %d %v", len(toks), err)
	}
	if toks[403] != "▁Once" && toks[403] != "Once" {
		t.Logf("token 403 is %q", toks[403])
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok {
		t.Fatal("no token_embd.weight")
	}
	if emb.Type != F32 || !reflect.DeepEqual(emb.Dims, []int64{64, 512}) {
		t.Errorf("token_embd: %s %v", emb.Type, emb.Dims)
	}
	data := f.TensorData(emb)
	if len(data) != 64*512*4 {
		t.Errorf("token_embd has %d bytes", len(data))
	}
	// 5 layers x 9 tensors + token_embd + output_norm (tied output).
	if len(f.Tensors) < 47 {
		t.Errorf("%d tensors", len(f.Tensors))
	}
	end := int64(0)
	for _, ti := range f.Tensors {
		end = max(end, f.DataOffset+ti.Offset+ti.Size)
	}
	if end > f.Size || f.Size-end >= int64(f.Alignment) {
		t.Errorf("tensor data ends at %d, file is %d bytes", end, f.Size)
	}
}

func sample(t testing.TB) []byte {
	w := NewWriter()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.Set("general.architecture", "llama"))
	must(w.Set("u8", uint8(7)))
	must(w.Set("i8", int8(-7)))
	must(w.Set("u16", uint16(65535)))
	must(w.Set("i16", int16(-300)))
	must(w.Set("u32", uint32(1<<31)))
	must(w.Set("i32", int32(-1<<30)))
	must(w.Set("f32", float32(1.5)))
	must(w.Set("b", true))
	must(w.Set("u64", uint64(math.MaxUint64)))
	must(w.Set("i64", int64(math.MinInt64)))
	must(w.Set("f64", math.Pi))
	must(w.Set("strs", []string{"a", "", "ü"}))
	must(w.Set("f32s", []float32{1, -2, 3.25}))
	must(w.Set("i32s", []int32{-1, 0, 1}))
	must(w.Set("bools", []bool{true, false}))
	must(w.Set("nested", []Array{{TypeUint8, []uint8{1, 2}}, {TypeString, []string{"x"}}}))
	must(w.AddTensor("a", F32, []int64{3, 2}, make([]byte, 24)))
	q := make([]byte, 34*2)
	for i := range q {
		q[i] = byte(i)
	}
	must(w.AddTensor("b", Q8_0, []int64{32, 2}, q))
	must(w.AddTensorFunc("c", F16, []int64{5}, func(w2 io.Writer) error {
		_, err := w2.Write([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
		return err
	}))
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	b := sample(t)
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"u8": uint8(7), "i8": int8(-7), "u16": uint16(65535), "i16": int16(-300),
		"u32": uint32(1 << 31), "i32": int32(-1 << 30), "f32": float32(1.5), "b": true,
		"u64": uint64(math.MaxUint64), "i64": int64(math.MinInt64), "f64": math.Pi,
		"strs":   Array{TypeString, []string{"a", "", "ü"}},
		"f32s":   Array{TypeFloat32, []float32{1, -2, 3.25}},
		"i32s":   Array{TypeInt32, []int32{-1, 0, 1}},
		"bools":  Array{TypeBool, []bool{true, false}},
		"nested": Array{TypeArray, []Array{{TypeUint8, []uint8{1, 2}}, {TypeString, []string{"x"}}}},
	}
	for k, v := range want {
		kv, ok := f.Get(k)
		if !ok || !reflect.DeepEqual(kv.Value, v) {
			t.Errorf("%s = %#v, want %#v", k, kv.Value, v)
		}
	}
	if _, err := f.Uint("i8"); err == nil {
		t.Error("Uint of a negative value did not fail")
	}
	if _, err := f.String("missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing key: %v", err)
	}
	ti, _ := f.Tensor("b")
	got := f.TensorData(ti)
	for i := range got {
		if got[i] != byte(i) {
			t.Fatalf("tensor b byte %d = %d", i, got[i])
		}
	}
	if ti.Offset%32 != 0 || ti.Size != 68 {
		t.Errorf("tensor b offset %d size %d", ti.Offset, ti.Size)
	}
	c, _ := f.Tensor("c")
	if d := f.TensorData(c); !bytes.Equal(d, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) {
		t.Errorf("tensor c = %v", d)
	}
	p := make([]byte, 4)
	if err := f.ReadAt(c, p, 6); err != nil || !bytes.Equal(p, []byte{7, 8, 9, 10}) {
		t.Errorf("ReadAt = %v %v", p, err)
	}
	if err := f.ReadAt(c, p, 7); err == nil {
		t.Error("ReadAt past the tensor did not fail")
	}
}

func TestOpenMapped(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.gguf")
	if err := os.WriteFile(p, sample(t), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := f.Tensor("c")
	q := make([]byte, 10)
	if err := f.ReadAt(c, q, 0); err != nil || q[9] != 10 {
		t.Errorf("ReadAt: %v %v", q, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// Every truncation of a valid file is an error (never a panic), and so is a tensor that runs
// past the end.
func TestTruncated(t *testing.T) {
	b := sample(t)
	full, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	last := full.Tensors[len(full.Tensors)-1]
	end := int(full.DataOffset + last.Offset + last.Size)
	for n := 0; n < end; n++ {
		if _, err := Parse(b[:n]); err == nil {
			t.Fatalf("prefix of %d bytes (of %d) parsed without error", n, len(b))
		}
	}
	p := filepath.Join(t.TempDir(), "t.gguf")
	os.WriteFile(p, b[:end-1], 0o644)
	_, err = Open(p)
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Path != p {
		t.Errorf("Open of a truncated file: %v", err)
	}
}

func TestCorrupt(t *testing.T) {
	b := sample(t)
	cases := map[string]func([]byte){
		"magic":      func(b []byte) { b[0] = 'X' },
		"version1":   func(b []byte) { b[4] = 1 },
		"version9":   func(b []byte) { b[4] = 9 },
		"bigendian":  func(b []byte) { b[4], b[7] = 0, 3 },
		"tensors":    func(b []byte) { b[15] = 0x7f },
		"kvs":        func(b []byte) { b[23] = 0x10 },
		"key length": func(b []byte) { b[31] = 0x40 },
	}
	for name, mutate := range cases {
		c := append([]byte(nil), b...)
		mutate(c)
		if _, err := Parse(c); err == nil {
			t.Errorf("%s: no error", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

func TestWriterErrors(t *testing.T) {
	w := NewWriter()
	if err := w.AddTensor("q", Q8_0, []int64{33}, make([]byte, 34)); err == nil {
		t.Error("a row of 33 Q8_0 elements was accepted")
	}
	if err := w.AddTensor("f", F32, []int64{2}, make([]byte, 7)); err == nil {
		t.Error("wrong data size was accepted")
	}
	if err := w.Set("x", struct{}{}); err == nil {
		t.Error("a struct value was accepted")
	}
	w.Set("k", "v")
	if err := w.Set("k", "v"); err == nil {
		t.Error("duplicate key accepted")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(sample(f))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := Parse(b)
		if err != nil {
			return
		}
		for i := range g.Tensors {
			_ = g.TensorData(&g.Tensors[i])
		}
		for _, kv := range g.KV {
			_, _ = g.Float(kv.Key)
		}
	})
}
