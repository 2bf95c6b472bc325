package collectives

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
)

var allreduceAlgs = []string{AlgRecursiveDoubling, AlgRabenseifner, AlgRing, AlgDirect, AlgHierarchical}

// TestAllreduceAlgorithms forces each algorithm on every rank count 1-8 and sizes 0, 1, odd,
// unit-sized blocks and a few segments' worth, against the naive reference.
func TestAllreduceAlgorithms(t *testing.T) {
	for _, alg := range allreduceAlgs {
		t.Run(alg, func(t *testing.T) {
			// A small segment makes the ring pipeline several segments per block.
			withTuning(t, func(tu *Tuning) { tu.AllreduceAlgorithm = alg; tu.RingSegment = 512 })
			for p := 1; p <= 8; p++ {
				for _, n := range []int{0, 1, 2, 3, 7, 8, 9, 63, 1000, 4099} {
					checkAllreduce[float64](t, p, n, "Sum", false)
					checkAllreduce[int32](t, p, n, "Max", true)
				}
			}
		})
	}
}

// TestAllreduceThresholds runs the automatic choice on both sides of every threshold, with the
// thresholds shrunk so the sizes stay small, and at the default thresholds for a few counts.
func TestAllreduceThresholds(t *testing.T) {
	t.Run("shrunk", func(t *testing.T) {
		withTuning(t, func(tu *Tuning) {
			tu.AllreduceSmallMsg, tu.AllreduceSmallMsgLo, tu.AllreduceLargeMsg, tu.RingSegment = 256, 512, 4096, 1024
		})
		for p := 1; p <= 8; p++ {
			for _, n := range []int{31, 32, 33, 63, 64, 65, 511, 512, 513} { // float64: 8 bytes each
				checkAllreduce[float64](t, p, n, "Sum", false)
			}
		}
	})
	t.Run("default", func(t *testing.T) {
		d := DefaultTuning()
		for _, p := range []int{2, 3, 4, 6} {
			small := d.AllreduceSmallMsg
			if p < 4 {
				small = d.AllreduceSmallMsgLo
			}
			for _, nb := range []int{small, d.AllreduceLargeMsg} {
				for _, n := range []int{nb/4 - 1, nb / 4, nb/4 + 1} { // float32
					checkAllreduce[float32](t, p, n, "Sum", false)
				}
			}
		}
	})
}

// TestAllreduceLarge moves several MiB through each bandwidth algorithm.
func TestAllreduceLarge(t *testing.T) {
	n := 3<<20/8 + 5 // 3 MiB of float64, odd
	if testing.Short() {
		n = 300<<10/8 + 5
	}
	for _, alg := range allreduceAlgs {
		withTuning(t, func(tu *Tuning) { tu.AllreduceAlgorithm = alg })
		for _, p := range []int{3, 4} {
			checkAllreduce[float64](t, p, n, "Sum", false)
		}
	}
}

// TestAllreduceSendUntouched: every algorithm leaves a separate send buffer as it was and
// does not read what recv held before the call (the ring reads send in place instead of
// copying it into recv first), at several rank counts and with segments smaller than a block.
func TestAllreduceSendUntouched(t *testing.T) {
	for _, alg := range allreduceAlgs {
		t.Run(alg, func(t *testing.T) {
			withTuning(t, func(tu *Tuning) { tu.AllreduceAlgorithm = alg; tu.RingSegment = 256 })
			for _, p := range []int{2, 3, 4} {
				for _, n := range []int{5, 1000} {
					want := refReduce[float64]("Sum", 0, p, n)
					run(t, p, func(c *comm.Comm) error {
						in := fill[float64](c.Rank(), n, false)
						orig := append([]float64(nil), in...)
						recv := make([]float64, n)
						for i := range recv {
							recv[i] = math.NaN()
						}
						if err := Allreduce(c, in, recv, Sum[float64]()); err != nil {
							return err
						}
						if err := equal(in, orig); err != nil {
							return fmt.Errorf("p=%d n=%d: send changed: %v", p, n, err)
						}
						if err := equal(recv, want); err != nil {
							return fmt.Errorf("p=%d n=%d: %v", p, n, err)
						}
						return nil
					})
				}
			}
		})
	}
}

// checkAllreduce runs one Allreduce (and its in-place form) against the reference.
func checkAllreduce[T ordered](t *testing.T, p, n int, op string, inPlace bool) {
	t.Helper()
	want := refReduce[T](op, 0, p, n)
	run(t, p, func(c *comm.Comm) error {
		in := fill[T](c.Rank(), n, op == "Prod")
		recv := make([]T, n)
		var err error
		if inPlace {
			copy(recv, in)
			err = Allreduce(c, nil, recv, opByName[T](op))
		} else {
			err = Allreduce(c, in, recv, opByName[T](op))
		}
		if err != nil {
			return err
		}
		if err := equal(recv, want); err != nil {
			return fmt.Errorf("%T %s p=%d n=%d in-place=%v: %v", recv, op, p, n, inPlace, err)
		}
		return nil
	})
}

// TestAllreduceTypesOps covers every op on every element type, through every algorithm.
func TestAllreduceTypesOps(t *testing.T) {
	for _, alg := range allreduceAlgs {
		t.Run(alg, func(t *testing.T) {
			withTuning(t, func(tu *Tuning) { tu.AllreduceAlgorithm = alg; tu.RingSegment = 64 })
			for _, p := range []int{3, 4} {
				for _, n := range []int{1, 38} {
					opsOrdered[int](t, p, n)
					opsOrdered[int8](t, p, n)
					opsOrdered[int16](t, p, n)
					opsOrdered[int32](t, p, n)
					opsOrdered[int64](t, p, n)
					opsOrdered[uint](t, p, n)
					opsOrdered[uint8](t, p, n)
					opsOrdered[uint16](t, p, n)
					opsOrdered[uint32](t, p, n)
					opsOrdered[uint64](t, p, n)
					opsOrdered[uintptr](t, p, n)
					opsOrdered[float32](t, p, n)
					opsOrdered[float64](t, p, n)
					opsBitwise[int](t, p, n)
					opsBitwise[int8](t, p, n)
					opsBitwise[int16](t, p, n)
					opsBitwise[int32](t, p, n)
					opsBitwise[int64](t, p, n)
					opsBitwise[uint](t, p, n)
					opsBitwise[uint8](t, p, n)
					opsBitwise[uint16](t, p, n)
					opsBitwise[uint32](t, p, n)
					opsBitwise[uint64](t, p, n)
					opsBitwise[uintptr](t, p, n)
					opsLoc[int32](t, p, n)
					opsLoc[float64](t, p, n)
					opsLoc[uint8](t, p, n)
					opsComplex[complex64](t, p, n)
					opsComplex[complex128](t, p, n)
					opsHalf[Float16](t, p, n, NewFloat16, Float16.Float32)
					opsHalf[BFloat16](t, p, n, NewBFloat16, BFloat16.Float32)
				}
			}
		})
	}
}

func opsOrdered[T ordered](t *testing.T, p, n int) {
	t.Helper()
	for _, op := range []string{"Sum", "Prod", "Min", "Max"} {
		checkAllreduce[T](t, p, n, op, false)
	}
	checkAllreduce[T](t, p, n, "Sum", true)
}

type integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr
}

func opsBitwise[T integer](t *testing.T, p, n int) {
	t.Helper()
	for _, op := range []string{"And", "Or", "Xor"} {
		want := make([]T, n)
		for i := range want {
			want[i] = T(uint8(i*37 + 11))
			for r := 1; r < p; r++ {
				x := T(uint8(r*91 + i*37 + 11))
				switch op {
				case "And":
					want[i] &= x
				case "Or":
					want[i] |= x
				case "Xor":
					want[i] ^= x
				}
			}
		}
		run(t, p, func(c *comm.Comm) error {
			in := make([]T, n)
			for i := range in {
				in[i] = T(uint8(c.Rank()*91 + i*37 + 11))
			}
			recv := make([]T, n)
			if err := Allreduce(c, in, recv, opByName[T](op)); err != nil {
				return err
			}
			if err := equal(recv, want); err != nil {
				return fmt.Errorf("%T %s: %v", recv, op, err)
			}
			return nil
		})
	}
}

// opsLoc checks MaxLoc and MinLoc over (value, index) pairs; values repeat across ranks, so
// ties must go to the smallest index.
func opsLoc[T ordered](t *testing.T, p, n int) {
	t.Helper()
	pairs := n
	for _, op := range []string{"MaxLoc", "MinLoc"} {
		want := make([]T, 2*pairs)
		for i := range pairs {
			bv, bi := T((i*5)%4), T(0)
			for r := 1; r < p; r++ {
				v := T((r*3 + i*5) % 4)
				if (op == "MaxLoc" && v > bv) || (op == "MinLoc" && v < bv) {
					bv, bi = v, T(r)
				}
			}
			want[2*i], want[2*i+1] = bv, bi
		}
		run(t, p, func(c *comm.Comm) error {
			in := make([]T, 2*pairs)
			for i := range pairs {
				in[2*i], in[2*i+1] = T((c.Rank()*3+i*5)%4), T(c.Rank())
			}
			recv := make([]T, 2*pairs)
			if err := Allreduce(c, in, recv, opByName[T](op)); err != nil {
				return err
			}
			if err := equal(recv, want); err != nil {
				return fmt.Errorf("%T %s: %v", recv, op, err)
			}
			return nil
		})
	}
}

func opsComplex[T complex64 | complex128](t *testing.T, p, n int) {
	t.Helper()
	val := func(r, i int) T { return T(complex(float64((r+i)%3-1), float64((r*2+i)%3-1))) }
	for _, op := range []string{"Sum", "Prod"} {
		want := make([]T, n)
		for i := range want {
			want[i] = val(0, i)
			for r := 1; r < p; r++ {
				if op == "Sum" {
					want[i] += val(r, i)
				} else {
					want[i] *= val(r, i)
				}
			}
		}
		run(t, p, func(c *comm.Comm) error {
			in := make([]T, n)
			for i := range in {
				in[i] = val(c.Rank(), i)
			}
			recv := make([]T, n)
			if err := Allreduce(c, in, recv, opByName[T](op)); err != nil {
				return err
			}
			return equal(recv, want)
		})
	}
}

// opsHalf checks half-precision reductions with values whose sums and products are exact in
// half precision, so the float32 reference rounds to the same result.
func opsHalf[H Float16 | BFloat16](t *testing.T, p, n int, mk func(float32) H, widen func(H) float32) {
	t.Helper()
	val := func(r, i int, prod bool) float32 {
		if prod {
			return float32(int(1+(r+i)%2) * (1 - 2*((r*i)%2)))
		}
		return float32((r*5+i*3)%9)*0.5 - 2
	}
	for _, op := range []string{"Sum", "Prod", "Min", "Max"} {
		want := make([]H, n)
		for i := range want {
			acc := val(0, i, op == "Prod")
			for r := 1; r < p; r++ {
				acc = refScalar(op, acc, val(r, i, op == "Prod"))
			}
			want[i] = mk(acc)
		}
		run(t, p, func(c *comm.Comm) error {
			in := make([]H, n)
			for i := range in {
				in[i] = mk(val(c.Rank(), i, op == "Prod"))
			}
			recv := make([]H, n)
			if err := Allreduce(c, in, recv, opByName[H](op)); err != nil {
				return err
			}
			if err := equal(recv, want); err != nil {
				return fmt.Errorf("%T %s: %v (%v)", recv, op, err, widen(recv[0]))
			}
			return nil
		})
	}
}

// TestAllreduceBitwiseIdentical: with random floats (where the order of additions matters),
// every rank must still get bitwise the same result, close to the exact sum.
func TestAllreduceBitwiseIdentical(t *testing.T) {
	for _, alg := range allreduceAlgs {
		withTuning(t, func(tu *Tuning) { tu.AllreduceAlgorithm = alg; tu.RingSegment = 4096 })
		for _, p := range []int{2, 5, 7, 8} {
			n := 20011
			input := func(r int) []float32 {
				rng := rand.New(rand.NewPCG(uint64(r), 9))
				v := make([]float32, n)
				for i := range v {
					v[i] = rng.Float32()*2 - 1
				}
				return v
			}
			exact := make([]float64, n)
			for r := range p {
				for i, x := range input(r) {
					exact[i] += float64(x)
				}
			}
			run(t, p, func(c *comm.Comm) error {
				res := make([]float32, n)
				if err := Allreduce(c, input(c.Rank()), res, Sum[float32]()); err != nil {
					return err
				}
				for i := 0; i < n; i += 97 {
					if d := float64(res[i]) - exact[i]; d > 1e-5 || d < -1e-5 {
						return fmt.Errorf("%s p=%d i=%d: got %v want %v", alg, p, i, res[i], exact[i])
					}
				}
				first := append([]float32(nil), res...)
				if err := Bcast(c, first, 0); err != nil {
					return err
				}
				for i := range res {
					if math.Float32bits(res[i]) != math.Float32bits(first[i]) {
						return fmt.Errorf("%s p=%d: rank %d's element %d is %v, rank 0's %v", alg, p, c.Rank(), i, res[i], first[i])
					}
				}
				return nil
			})
		}
	}
}

// mat2 is a 2x2 matrix of uint16 entries packed in a uint64; its product (mod 2^16) is
// associative but not commutative, so it shows any reduction done out of rank order.
func mat2Mul(a, b uint64) uint64 {
	g := func(m uint64, k int) uint64 { return (m >> (16 * k)) & 0xffff }
	c := [4]uint64{
		g(a, 0)*g(b, 0) + g(a, 1)*g(b, 2), g(a, 0)*g(b, 1) + g(a, 1)*g(b, 3),
		g(a, 2)*g(b, 0) + g(a, 3)*g(b, 2), g(a, 2)*g(b, 1) + g(a, 3)*g(b, 3),
	}
	return c[0]&0xffff | (c[1]&0xffff)<<16 | (c[2]&0xffff)<<32 | (c[3]&0xffff)<<48
}

var matOp = NewOp("mat2mul", false, func(in, inout []uint64) {
	for i := range inout {
		inout[i] = mat2Mul(in[i], inout[i])
	}
})

func matInput(r, i int) uint64 {
	x := uint64(r*7919 + i*104729 + 1)
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	return x
}

func matRef(lo, hi, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		acc := matInput(lo, i)
		for r := lo + 1; r < hi; r++ {
			acc = mat2Mul(acc, matInput(r, i))
		}
		out[i] = acc
	}
	return out
}

func TestNonCommutative(t *testing.T) {
	for _, alg := range allreduceAlgs { // forcing must not break rank order
		withTuning(t, func(tu *Tuning) {
			tu.AllreduceAlgorithm, tu.ReduceAlgorithm = alg, AlgReduceScatterGath
		})
		for p := 1; p <= 8; p++ {
			n := 13
			run(t, p, func(c *comm.Comm) error {
				r := c.Rank()
				in := make([]uint64, n)
				for i := range in {
					in[i] = matInput(r, i)
				}
				out := make([]uint64, n)
				if err := Allreduce(c, in, out, matOp); err != nil {
					return err
				}
				if err := equal(out, matRef(0, p, n)); err != nil {
					return fmt.Errorf("allreduce p=%d: %v", p, err)
				}
				for _, root := range []int{0, p - 1, p / 2} {
					out := make([]uint64, n)
					if err := Reduce(c, in, out, matOp, root); err != nil {
						return err
					}
					if r == root {
						if err := equal(out, matRef(0, p, n)); err != nil {
							return fmt.Errorf("reduce p=%d root=%d: %v", p, root, err)
						}
					}
				}
				if err := Scan(c, in, out, matOp); err != nil {
					return err
				}
				if err := equal(out, matRef(0, r+1, n)); err != nil {
					return fmt.Errorf("scan p=%d: %v", p, err)
				}
				ex := make([]uint64, n)
				if err := Exscan(c, in, ex, matOp); err != nil {
					return err
				}
				if r > 0 {
					if err := equal(ex, matRef(0, r, n)); err != nil {
						return fmt.Errorf("exscan p=%d: %v", p, err)
					}
				}
				counts := make([]int, p)
				total := 0
				for i := range counts {
					counts[i] = i%3 + 1
					total += counts[i]
				}
				full := make([]uint64, total)
				for i := range full {
					full[i] = matInput(r, i)
				}
				rs := make([]uint64, counts[r])
				if err := ReduceScatter(c, full, rs, counts, matOp); err != nil {
					return err
				}
				off := 0
				for i := 0; i < r; i++ {
					off += counts[i]
				}
				if err := equal(rs, matRef(0, p, total)[off:off+counts[r]]); err != nil {
					return fmt.Errorf("reduce-scatter p=%d: %v", p, err)
				}
				return nil
			})
		}
	}
}
