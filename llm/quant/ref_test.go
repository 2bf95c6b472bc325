package quant

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// refVectors is one testdata/<type>.bin, written by testdata/refgen with ggml's code.
type refVectors struct {
	x        []float32 // input
	q        []byte    // quantize_row_*_ref(x)
	dq       []float32 // dequantize_row_*(q)
	r        []byte    // random blocks (sane f16 scales)
	dr       []float32 // dequantize_row_*(r)
	act      []float32 // an activation vector
	dotQ     float32   // ggml CPU vec_dot(q, from_float(act)) in ggml's vec_dot_type
	dotR     float32   // same for r
	vecType  gguf.Type // ggml's vec_dot_type
	rowBytes int
}

func readRef(t *testing.T, typ gguf.Type) *refVectors {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", typ.String()+".bin"))
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	n := int(le.Uint32(b))
	rb64, err := typ.RowBytes(int64(n))
	if err != nil {
		t.Fatal(err)
	}
	rb := int(rb64)
	if want := 4 + 4*n + rb + 4*n + rb + 4*n + 4*n + 8 + 4; len(b) != want {
		t.Fatalf("%s: %d bytes, want %d", typ, len(b), want)
	}
	off := 4
	floats := func() []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = math.Float32frombits(le.Uint32(b[off+4*i:]))
		}
		off += 4 * n
		return v
	}
	bytes := func() []byte { off += rb; return b[off-rb : off] }
	v := &refVectors{rowBytes: rb}
	v.x, v.q, v.dq, v.r, v.dr, v.act = floats(), bytes(), floats(), bytes(), floats(), floats()
	v.dotQ = math.Float32frombits(le.Uint32(b[off:]))
	v.dotR = math.Float32frombits(le.Uint32(b[off+4:]))
	v.vecType = gguf.Type(le.Uint32(b[off+8:]))
	return v
}

var refTypes = []gguf.Type{gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.Q8_0, gguf.IQ4_NL,
	gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K, gguf.IQ4_XS}

func sameBits(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// Dequantization equals ggml's bit for bit, on its quantizer's blocks and on random blocks.
func TestDequantizeMatchesGGML(t *testing.T) {
	for _, typ := range refTypes {
		v := readRef(t, typ)
		for _, c := range []struct {
			name string
			q    []byte
			want []float32
		}{{"quantized", v.q, v.dq}, {"random", v.r, v.dr}} {
			got := make([]float32, len(v.x))
			if err := Dequantize(typ, c.q, got); err != nil {
				t.Fatal(err)
			}
			if i := sameBits(got, c.want); i >= 0 {
				t.Errorf("%s %s blocks: element %d dequantized to %v, ggml %v", typ, c.name, i, got[i], c.want[i])
			}
		}
	}
}

// The quantizers write the bytes llama-quantize writes (ggml_quantize_chunk without an
// importance matrix).
func TestQuantizeMatchesGGML(t *testing.T) {
	for _, typ := range refTypes {
		if !CanQuantize(typ) {
			continue
		}
		v := readRef(t, typ)
		got := make([]byte, v.rowBytes)
		if err := Quantize(typ, v.x, got); err != nil {
			t.Fatal(err)
		}
		bs := typ.TypeSize()
		for o := 0; o < len(got); o += bs {
			g, w := got[o:o+bs], v.q[o:o+bs]
			if string(g) == string(w) {
				continue
			}
			t.Errorf("%s block %d: quantized to %x, ggml %x", typ, o/bs, g, w)
			break
		}
	}
}

// Dot products against the float64 dot of the dequantized row with the activation as the
// kernel sees it, and against ggml's CPU kernel on the same row and activation: the
// activation conversions are the same rule, so the two differ by float rounding only.
func TestDotMatchesGGML(t *testing.T) {
	for _, typ := range refTypes {
		v := readRef(t, typ)
		if VecType(typ) != v.vecType {
			t.Errorf("%s: activation type %s, ggml's vec_dot_type %s", typ, VecType(typ), v.vecType)
		}
		var x Vec
		if err := x.Load(typ, v.act); err != nil {
			t.Fatal(err)
		}
		xs := activationAsFloats(&x)
		for _, c := range []struct {
			name string
			row  []byte
			dq   []float32
			ggml float32
		}{{"quantized", v.q, v.dq, v.dotQ}, {"random", v.r, v.dr, v.dotR}} {
			var ref, mag float64
			for i, w := range c.dq {
				ref += float64(w) * float64(xs[i])
				mag += math.Abs(float64(w) * float64(xs[i]))
			}
			if x.Type == gguf.Q8_1 {
				// The min term of Q4_1/Q5_1 takes Q8_1's stored F16 d*sum, not the sum of
				// the block's dequantized quants.
				bs := typ.TypeSize()
				for b := range x.S {
					var sx float64
					for _, f := range xs[32*b : 32*b+32] {
						sx += float64(f)
					}
					m := F16ToF32(binary.LittleEndian.Uint16(c.row[b*bs+2:]))
					ref += float64(m) * (float64(x.S[b]) - sx)
				}
			}
			got := float64(Dot(typ, c.row, &x))
			// float32 accumulation over 1024 products: a few ulps of the magnitude.
			if math.Abs(got-ref) > 2e-6*mag+1e-6 {
				t.Errorf("%s %s: Dot %g, float64 reference %g (magnitude %g)", typ, c.name, got, ref, mag)
			}
			if math.Abs(got-float64(c.ggml)) > 2e-6*mag+1e-6 {
				t.Errorf("%s %s: Dot %g, ggml %g (magnitude %g)", typ, c.name, got, c.ggml, mag)
			}
		}
	}
}

// activationAsFloats is the activation vector v as its dot products see it.
func activationAsFloats(v *Vec) []float32 {
	xs := make([]float32, v.N)
	switch v.Type {
	case gguf.F32:
		copy(xs, v.F32)
	case gguf.F16:
		for i, h := range v.U16 {
			xs[i] = F16ToF32(h)
		}
	case gguf.BF16:
		for i, h := range v.U16 {
			xs[i] = BF16ToF32(h)
		}
	case gguf.Q8_0, gguf.Q8_1:
		Dequantize(gguf.Q8_0, v.Q8, xs)
	case gguf.Q8_K:
		for b, blk := range v.K {
			for j, q := range blk.Qs {
				xs[b*QK_K+j] = blk.D * float32(q)
			}
		}
	}
	return xs
}
