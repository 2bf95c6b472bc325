package quant

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// Interleaving (repack.go) on any CPU: rows read back unchanged, the Go twin equals the
// generic row dot products bit for bit, and MatVec/MatMul on the groups (the assembly where
// the CPU has it, else the twin) equal the one-row kernels bit for bit (Q8_0 MatMul: close).
func TestRepackGroups(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, typ := range []gguf.Type{gguf.Q4_0, gguf.Q8_0} {
		for _, g := range []int{8, 16} {
			for _, shape := range [][2]int{{8, 1}, {16, 3}, {37, 8}, {2*g + 5, 5}, {70, 88}} {
				rows, nb := shape[0], shape[1]
				cols := nb * QK8_0
				name := fmt.Sprintf("%s g=%d %dx%d", typ, g, rows, cols)
				data := randBlocks(r, typ, rows*cols)
				orig := bytes.Clone(data)
				m, err := NewMatrix(typ, rows, cols, data)
				if err != nil {
					t.Fatal(err)
				}
				m.repackGroups(g)
				m.prepared = 1
				if rows < g {
					if m.Interleaved() != 0 || !bytes.Equal(m.Data, orig) {
						t.Fatalf("%s: fewer rows than a group, yet interleaved", name)
					}
					continue
				}
				if m.Interleaved() != g || len(m.Data) != len(orig) || unsafe.SliceData(m.Data) != unsafe.SliceData(data) {
					t.Fatalf("%s: interleaved %d rows, %d bytes (want %d in the same buffer)", name, m.Interleaved(), len(m.Data), len(orig))
				}
				if bytes.Equal(m.Data, orig) {
					t.Fatalf("%s: data unchanged by interleaving", name)
				}
				rb := m.RowBytes
				for i := 0; i < rows; i++ {
					if !bytes.Equal(m.Row(i), orig[i*rb:(i+1)*rb]) {
						t.Fatalf("%s: row %d reads back differently", name, i)
					}
				}
				xs := make([]Vec, 5)
				ys := make([][]float32, len(xs))
				for v := range xs {
					if err := xs[v].Load(typ, randVec(r, cols)); err != nil {
						t.Fatal(err)
					}
					ys[v] = make([]float32, rows)
				}
				generic := dotQ8_0Generic
				if typ == gguf.Q4_0 {
					generic = dotQ4_0Generic
				}
				// The twin, every group.
				y := make([]float32, rows)
				gemvGroups(m, &xs[0], y, 0, rows/g)
				for i := 0; i < rows/g*g; i++ {
					if want := generic(orig[i*rb:(i+1)*rb], xs[0].Q8); y[i] != want {
						t.Fatalf("%s row %d: twin %v, generic %v", name, i, y[i], want)
					}
				}
				// With the assembly off, MatVec runs the twin.
				restore := setVNNI(false)
				MatVec(nil, m, &xs[1], y)
				restore()
				for i := 0; i < rows/g*g; i++ {
					if want := generic(orig[i*rb:(i+1)*rb], xs[1].Q8); y[i] != want {
						t.Fatalf("%s row %d: MatVec without VNNI %v, generic %v", name, i, y[i], want)
					}
				}
				// MatVec and MatMul (batches of 1..5, three threads) against Dot on the rows.
				for _, threads := range []int{1, 3} {
					p := &Pool{Threads: threads}
					MatVec(p, m, &xs[0], y)
					for n := 1; n <= len(xs); n++ {
						MatMul(p, m, xs[:n], ys[:n])
						for v := 0; v < n; v++ {
							for i := 0; i < rows; i++ {
								want := Dot(typ, orig[i*rb:(i+1)*rb], &xs[v])
								// arm64 has no interleaved kernels: its MatVec on groups is the
								// twin (dotQ8_0Generic's order), Dot the NEON kernel (eight lanes)
								twinOnly := typ == gguf.Q8_0 && strings.HasPrefix(Kernel(), "neon")
								if v == 0 && y[i] != want && (!twinOnly || math.Abs(float64(y[i]-want)) > 1e-6*absDot(orig[i*rb:(i+1)*rb], xs[v].Q8)) {
									t.Fatalf("%s row %d: MatVec %v, Dot %v (kernel %s)", name, i, y[i], want, Kernel())
								}
								// Q8_0's gemm sums block totals (Dot: eight sums per row).
								if got := ys[v][i]; got != want && (typ != gguf.Q8_0 || math.Abs(float64(got-want)) > 1e-6*absDot(orig[i*rb:(i+1)*rb], xs[v].Q8)) {
									t.Fatalf("%s batch %d vector %d row %d: MatMul %v, Dot %v (kernel %s)", name, n, v, i, got, want, Kernel())
								}
							}
						}
					}
				}
			}
		}
	}
}

// Repack interleaves where this CPU has the kernels and leaves every other matrix as it is.
func TestRepackChoice(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, typ := range []gguf.Type{gguf.Q8_0, gguf.Q4_0, gguf.Q4_K, gguf.F32} {
		rows, cols := 40, 256
		data := randBlocks(r, typ, rows*cols)
		if typ == gguf.F32 {
			data = make([]byte, 4*rows*cols)
		}
		orig := bytes.Clone(data)
		m, err := NewMatrix(typ, rows, cols, data)
		if err != nil {
			t.Fatal(err)
		}
		m.Repack()
		m.Repack() // once only
		if g := packGroup(typ); m.Interleaved() != g {
			t.Fatalf("%s: interleaved %d rows, this CPU's kernels take %d", typ, m.Interleaved(), g)
		}
		if m.Interleaved() == 0 && !bytes.Equal(m.Data, orig) {
			t.Fatalf("%s: not interleaved, yet changed", typ)
		}
		for i := 0; i < rows; i++ {
			if !bytes.Equal(m.Row(i), orig[i*m.RowBytes:(i+1)*m.RowBytes]) {
				t.Fatalf("%s: row %d reads back differently", typ, i)
			}
		}
	}
}

// BenchmarkMatVecLayout: MatVec and MatMul (a batch of 16) on a 1024 x 2816 matrix in the
// file's layout and interleaved.
func BenchmarkMatVecLayout(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, typ := range []gguf.Type{gguf.Q4_0, gguf.Q8_0} {
		for _, layout := range []string{"rows", "groups"} {
			rows, cols := 2816, 1024
			m, _ := NewMatrix(typ, rows, cols, randBlocks(r, typ, rows*cols))
			if layout == "groups" {
				m.Repack()
				if m.Interleaved() == 0 {
					b.Skip("no interleaved kernels on this CPU")
				}
			} else {
				m.prepared = 1
			}
			xs := make([]Vec, 16)
			ys := make([][]float32, 16)
			for i := range xs {
				xs[i].Load(typ, randVec(r, cols))
				ys[i] = make([]float32, rows)
			}
			b.Run(fmt.Sprintf("%s/%s/vec", typ, layout), func(b *testing.B) {
				b.SetBytes(int64(len(m.Data)))
				for b.Loop() {
					MatVec(nil, m, &xs[0], ys[0])
				}
			})
			b.Run(fmt.Sprintf("%s/%s/batch16", typ, layout), func(b *testing.B) {
				b.SetBytes(int64(len(m.Data)))
				for b.Loop() {
					MatMul(nil, m, xs, ys)
				}
			})
		}
	}
}

// absDot is the sum of |w_i x_i| for a Q8_0 row and a Q8_0 vector: the scale of the rounding
// error of any order of summing their products.
func absDot(w, x []byte) float64 {
	a, b := make([]float32, len(x)/BlockQ8_0*QK8_0), make([]float32, len(x)/BlockQ8_0*QK8_0)
	if Dequantize(gguf.Q8_0, w, a) != nil || Dequantize(gguf.Q8_0, x, b) != nil {
		panic("absDot: not Q8_0 rows")
	}
	var s float64
	for i := range a {
		s += math.Abs(float64(a[i]) * float64(b[i]))
	}
	return s
}
