package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// gemmOrderedGo is the Go twin of the ordered Q8_0 gemm kernels on an interleaved m: for each
// vector and row, eight float lanes, lane k adding (Q8Neg128 + the sum of (q+128)·x over quants
// 4k..4k+3) times d_w*d_x with one rounding per block, then (4+0, 6+2, 5+1, 7+3), (2+0, 3+1),
// 1+0.
func gemmOrderedGo(m *Matrix, xs []Vec, ys [][]float32) {
	g, bs := m.group, m.Type.TypeSize()
	nb := m.Cols / QK8_0
	for gi := 0; gi < m.Rows/g; gi++ {
		grp := m.Data[gi*g*m.RowBytes : (gi+1)*g*m.RowBytes]
		for t := range xs {
			x := &xs[t]
			for r := 0; r < g; r++ {
				var l [8]float32
				for b := 0; b < nb; b++ {
					pb := grp[b*g*bs : (b+1)*g*bs]
					xb := x.Q8[b*BlockQ8_0 : (b+1)*BlockQ8_0]
					sc := F16ToF32(binary.LittleEndian.Uint16(pb[2*r:])) * x.D[b]
					for k := 0; k < 8; k++ {
						acc := x.Q8Neg128[8*b+k]
						for j := 0; j < 4; j++ {
							acc += int32(pb[2*g+4*g*k+4*r+j]) * int32(int8(xb[2+4*k+j]))
						}
						l[k] = float32(math.FMA(float64(acc), float64(sc), float64(l[k])))
					}
				}
				l[0], l[2], l[1], l[3] = l[0]+l[4], l[2]+l[6], l[1]+l[5], l[3]+l[7]
				l[0], l[1] = l[0]+l[2], l[1]+l[3]
				ys[t][gi*g+r] = l[0] + l[1]
			}
		}
	}
}

// MatMulExact on Q8_0 equals MatVec bit for bit for every vector and row: whole groups of 8 and
// 16 rows and the rows after them, odd and even batches, one and two threads, and the Go
// twin of the kernels where the rows are interleaved.
func TestMatMulExactMatchesMatVec(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 13))
	for _, wide := range []bool{true, false} {
		restore := set512(wide)
		for _, c := range []struct{ rows, nb, n int }{{16*3 + 5, 8, 5}, {32, 3, 4}, {8, 1, 1}, {7, 2, 3}, {64, 16, 32}} {
			cols := c.nb * 32
			m, _ := NewMatrix(gguf.Q8_0, c.rows, cols, randBlocks(r, gguf.Q8_0, c.rows*cols))
			xs := make([]Vec, c.n)
			got, twin, block := make([][]float32, c.n), make([][]float32, c.n), make([][]float32, c.n)
			for i := range xs {
				x := randVec(r, cols)
				if i == 0 { // extremes: ±127 activations against whatever weights
					for j := range x {
						x[j] = float32(1 - 2*(j&1))
					}
				}
				xs[i].Load(gguf.Q8_0, x)
				got[i], twin[i], block[i] = make([]float32, c.rows), make([]float32, c.rows), make([]float32, c.rows)
			}
			for _, th := range []int{1, 2} {
				MatMulExact(&Pool{Threads: th}, m, xs, got)
				MatMul(&Pool{Threads: th}, m, xs, block)
				differ := 0
				for i := range xs {
					want := make([]float32, c.rows)
					MatVec(nil, m, &xs[i], want)
					for row := range want {
						if math.Float32bits(got[i][row]) != math.Float32bits(want[row]) {
							t.Fatalf("group %d, %dx%d, %d vectors, %d threads: vector %d row %d: MatMulExact %v, MatVec %v", m.Interleaved(), c.rows, cols, c.n, th, i, row, got[i][row], want[row])
						}
						if block[i][row] != want[row] {
							differ++
						}
					}
				}
				if th == 1 {
					t.Logf("group %d, %dx%d, %d vectors: MatMul differs from MatVec in %d of %d results", m.Interleaved(), c.rows, cols, c.n, differ, c.rows*c.n)
				}
			}
			if m.Interleaved() > 0 {
				gemmOrderedGo(m, xs, twin)
				for i := range xs {
					for row := 0; row < c.rows/m.Interleaved()*m.Interleaved(); row++ {
						if math.Float32bits(twin[i][row]) != math.Float32bits(got[i][row]) {
							t.Fatalf("group %d: vector %d row %d: Go twin %v, kernel %v", m.Interleaved(), i, row, twin[i][row], got[i][row])
						}
					}
				}
			}
		}
		restore()
	}
}

// An expert's up projection of a ~1B-total mixture (2048 rows of 1024) against a prefill's
// share of tokens, with MatMul's kernels, with MatMulExact's and with MatVec per vector.
func BenchmarkQ8MatMulExact(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	rows, cols, n := 2048, 1024, 32
	m, _ := NewMatrix(gguf.Q8_0, rows, cols, randBlocks(r, gguf.Q8_0, rows*cols))
	xs, ys := make([]Vec, n), make([][]float32, n)
	for i := range xs {
		xs[i].Load(gguf.Q8_0, randVec(r, cols))
		ys[i] = make([]float32, rows)
	}
	for _, c := range []struct {
		name string
		f    func(*Pool, *Matrix, []Vec, [][]float32)
	}{{"MatMul", MatMul}, {"MatMulExact", MatMulExact}, {"MatVecEach", func(p *Pool, m *Matrix, xs []Vec, ys [][]float32) {
		for t := range xs {
			MatVec(p, m, &xs[t], ys[t])
		}
	}}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.f(nil, m, xs, ys)
			}
		})
	}
}
