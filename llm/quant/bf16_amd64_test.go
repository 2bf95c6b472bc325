//go:build amd64 && !noasm

package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// The BF16 row kernel (MatVec, MatMul and the row hook on sub-ranges) against its Go twin
// dotBF16Lanes bit for bit, on widths with and without a tail below 32, random values of
// every magnitude (up to products that overflow) and signed zeros; and the twin against
// dotBF16 within rounding.
func TestBF16RowsMatchGo(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	// extreme: signed zeros and finite values of every magnitude among normal ones (rows and
	// vectors with them are dominated by their largest products; the others are not).
	randBF := func(extreme bool) uint16 {
		if !extreme {
			return F32ToBF16(float32(r.NormFloat64()))
		}
		switch r.IntN(8) {
		case 0:
			return uint16(r.IntN(2)) << 15 // signed zero
		case 1: // any finite value
			for {
				if h := uint16(r.IntN(1 << 16)); h&0x7f80 != 0x7f80 {
					return h
				}
			}
		}
		return F32ToBF16(float32(r.NormFloat64()))
	}
	for _, n := range []int{32, 64, 96, 100, 255, 896} {
		const rows = 7
		data := make([]byte, rows*2*n)
		for i := 0; i < len(data); i += 2 {
			binary.LittleEndian.PutUint16(data[i:], randBF(i/(2*n) == 0))
		}
		m, err := NewMatrix(gguf.BF16, rows, n, data)
		if err != nil {
			t.Fatal(err)
		}
		xs := make([]Vec, 3)
		for k := range xs {
			xs[k] = Vec{Type: gguf.BF16, N: n, U16: make([]uint16, n)}
			for i := range xs[k].U16 {
				xs[k].U16[i] = randBF(k == 2)
			}
		}
		want := func(k, i int) float32 { return dotBF16Lanes(m.Row(i), xs[k].U16) }
		y := make([]float32, rows)
		MatVec(nil, m, &xs[0], y)
		for i := range y {
			if !sameFloat(y[i], want(0, i)) {
				t.Fatalf("n=%d row %d: MatVec %v (%#x), Go %v (%#x)", n, i, y[i], math.Float32bits(y[i]), want(0, i), math.Float32bits(want(0, i)))
			}
		}
		for _, rg := range [][2]int{{1, 6}, {3, 4}} {
			const sentinel = -3.5
			for i := range y {
				y[i] = sentinel
			}
			if !rowsBF16(m, &xs[1], y, rg[0], rg[1]) {
				t.Fatalf("n=%d: the kernel declined rows %v", n, rg)
			}
			for i := range y {
				if in := i >= rg[0] && i < rg[1]; in && !sameFloat(y[i], want(1, i)) || !in && y[i] != sentinel {
					t.Fatalf("n=%d rows %v: row %d is %v, Go %v", n, rg, i, y[i], want(1, i))
				}
			}
		}
		ys := [][]float32{make([]float32, rows), make([]float32, rows), make([]float32, rows)}
		MatMul(&Pool{Threads: 2}, m, xs, ys)
		for k := range ys {
			for i := range ys[k] {
				if !sameFloat(ys[k][i], want(k, i)) {
					t.Fatalf("n=%d vector %d row %d: MatMul %v, Go %v", n, k, i, ys[k][i], want(k, i))
				}
			}
		}
	}
	// The twin sums in another order than dotBF16, within rounding on ordinary values.
	for trial := 0; trial < 20; trial++ {
		n := 32 + r.IntN(900)
		row := make([]byte, 2*n)
		x := make([]uint16, n)
		var mag float64
		for i := range x {
			a, b := F32ToBF16(float32(r.NormFloat64())), F32ToBF16(float32(r.NormFloat64()))
			binary.LittleEndian.PutUint16(row[2*i:], a)
			x[i] = b
			mag += math.Abs(float64(BF16ToF32(a) * BF16ToF32(b)))
		}
		if got, ref := dotBF16Lanes(row, x), dotBF16(row, x); math.Abs(float64(got-ref)) > 1e-5*mag+1e-6 {
			t.Fatalf("n=%d: lanes %v, dotBF16 %v", n, got, ref)
		}
	}
}

// BenchmarkBF16MatVec: decode's BF16 product at Qwen2.5-0.5B's FFN shapes, dotBF16 row by row
// (go, what ran before the kernel) against MatVec with the kernel (asm).
func BenchmarkBF16MatVec(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, sh := range []struct{ rows, cols int }{{4864, 896}, {896, 4864}} {
		data := make([]byte, 2*sh.rows*sh.cols)
		for i := 0; i < len(data); i += 2 {
			binary.LittleEndian.PutUint16(data[i:], F32ToBF16(float32(r.NormFloat64())))
		}
		m, err := NewMatrix(gguf.BF16, sh.rows, sh.cols, data)
		if err != nil {
			b.Fatal(err)
		}
		var v Vec
		v.Load(gguf.BF16, randVec(r, sh.cols))
		y := make([]float32, sh.rows)
		for _, asm := range []bool{false, true} {
			b.Run(fmt.Sprintf("%dx%d/asm=%v", sh.rows, sh.cols, asm), func(b *testing.B) {
				b.SetBytes(int64(len(m.Data)))
				for i := 0; i < b.N; i++ {
					if asm {
						MatVec(nil, m, &v, y)
					} else {
						for j := range y {
							y[j] = dotBF16(m.Data[j*m.RowBytes:(j+1)*m.RowBytes], v.U16)
						}
					}
				}
			})
		}
	}
}
