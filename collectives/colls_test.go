package collectives

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gorun-hpc/gorun/comm"
)

var testSizes = []int{0, 1, 5, 1001}

func roots(p int) []int {
	if p == 1 {
		return []int{0}
	}
	return []int{0, p - 1, p / 2}
}

func TestBcast(t *testing.T) {
	for _, alg := range []string{AlgRecursiveDoubling, AlgBinomial, AlgScatterAllgather, AlgHierarchical} {
		withTuning(t, func(tu *Tuning) { tu.BcastAlgorithm = alg })
		for p := 1; p <= 8; p++ {
			for _, n := range append(testSizes, 3*p+1) {
				for _, root := range roots(p) {
					run(t, p, func(c *comm.Comm) error {
						buf := make([]int64, n)
						if c.Rank() == root {
							buf = fill[int64](99, n, false)
						}
						if err := Bcast(c, buf, root); err != nil {
							return err
						}
						if err := equal(buf, fill[int64](99, n, false)); err != nil {
							return fmt.Errorf("%s p=%d n=%d root=%d: %v", alg, p, n, root, err)
						}
						return nil
					})
				}
			}
		}
	}
	// Across the automatic threshold, default table.
	big := DefaultTuning().BcastLargeMsg
	for _, n := range []int{big - 1, big, big + 1} {
		run(t, 5, func(c *comm.Comm) error {
			buf := make([]byte, n)
			if c.Rank() == 2 {
				for i := range buf {
					buf[i] = byte(i * 7)
				}
			}
			if err := Bcast(c, buf, 2); err != nil {
				return err
			}
			for i := range buf {
				if buf[i] != byte(i*7) {
					return fmt.Errorf("n=%d: byte %d wrong", n, i)
				}
			}
			return nil
		})
	}
}

func TestReduce(t *testing.T) {
	for _, alg := range []string{AlgBinomial, AlgReduceScatterGath} {
		withTuning(t, func(tu *Tuning) { tu.ReduceAlgorithm = alg })
		for p := 1; p <= 8; p++ {
			for _, n := range append(testSizes, 8*p+3) {
				for _, root := range roots(p) {
					for _, inPlace := range []bool{false, true} {
						want := refReduce[int64]("Sum", 0, p, n)
						run(t, p, func(c *comm.Comm) error {
							in := fill[int64](c.Rank(), n, false)
							var recv []int64
							if c.Rank() == root {
								recv = make([]int64, n)
							}
							var err error
							if inPlace && c.Rank() == root {
								copy(recv, in)
								err = Reduce(c, nil, recv, Sum[int64](), root)
							} else {
								err = Reduce(c, in, recv, Sum[int64](), root)
							}
							if err != nil {
								return err
							}
							if c.Rank() == root {
								if err := equal(recv, want); err != nil {
									return fmt.Errorf("%s p=%d n=%d root=%d in-place=%v: %v", alg, p, n, root, inPlace, err)
								}
							}
							// The input must be untouched.
							return equal(in, fill[int64](c.Rank(), n, false))
						})
					}
				}
			}
		}
	}
}

func TestAllgather(t *testing.T) {
	for _, alg := range []string{AlgRecursiveDoubling, AlgRing} {
		withTuning(t, func(tu *Tuning) { tu.AllgatherAlgorithm = alg })
		for p := 1; p <= 8; p++ {
			for _, n := range testSizes {
				for _, inPlace := range []bool{false, true} {
					want := make([]int16, 0, p*n)
					for r := range p {
						want = append(want, fill[int16](r, n, false)...)
					}
					run(t, p, func(c *comm.Comm) error {
						recv := make([]int16, p*n)
						in := fill[int16](c.Rank(), n, false)
						var err error
						if inPlace {
							copy(recv[c.Rank()*n:], in)
							err = Allgather(c, nil, recv)
						} else {
							err = Allgather(c, in, recv)
						}
						if err != nil {
							return err
						}
						if err := equal(recv, want); err != nil {
							return fmt.Errorf("%s p=%d n=%d in-place=%v: %v", alg, p, n, inPlace, err)
						}
						return nil
					})
				}
			}
		}
	}
}

// vcounts gives uneven counts with zeros.
func vcounts(p, scale int) []int {
	c := make([]int, p)
	for i := range c {
		c[i] = (i * 5 % 4) * scale
		if i == 0 {
			c[i] = scale + 1
		}
	}
	return c
}

func TestAllgatherv(t *testing.T) {
	for p := 1; p <= 8; p++ {
		for _, scale := range []int{0, 1, 300} {
			counts := vcounts(p, scale)
			displs := make([]int, p) // gaps between blocks, in reverse order
			total := 0
			for i := p - 1; i >= 0; i-- {
				displs[i] = total + 1
				total += counts[i] + 1
			}
			run(t, p, func(c *comm.Comm) error {
				r := c.Rank()
				recv := make([]float32, total)
				if err := Allgatherv(c, fill[float32](r, counts[r], false), recv, counts, displs); err != nil {
					return err
				}
				for i := range p {
					if err := equal(recv[displs[i]:displs[i]+counts[i]], fill[float32](i, counts[i], false)); err != nil {
						return fmt.Errorf("p=%d block %d: %v", p, i, err)
					}
				}
				// In place, packed.
				packed := make([]float32, 0)
				for i := range p {
					packed = append(packed, fill[float32](i, counts[i], false)...)
				}
				recv = make([]float32, len(packed))
				off := 0
				for i := 0; i < r; i++ {
					off += counts[i]
				}
				copy(recv[off:], fill[float32](r, counts[r], false))
				if err := Allgatherv(c, nil, recv, counts, nil); err != nil {
					return err
				}
				return equal(recv, packed)
			})
		}
	}
}

func TestGatherScatter(t *testing.T) {
	for p := 1; p <= 8; p++ {
		for _, n := range testSizes {
			for _, root := range roots(p) {
				run(t, p, func(c *comm.Comm) error {
					r := c.Rank()
					all := make([]uint32, 0, p*n)
					for i := range p {
						all = append(all, fill[uint32](i, n, false)...)
					}
					var recv []uint32
					if r == root {
						recv = make([]uint32, p*n)
					}
					if err := Gather(c, fill[uint32](r, n, false), recv, root); err != nil {
						return err
					}
					if r == root {
						if err := equal(recv, all); err != nil {
							return fmt.Errorf("gather p=%d n=%d root=%d: %v", p, n, root, err)
						}
						// In place.
						clear(recv)
						copy(recv[r*n:], fill[uint32](r, n, false))
						if err := Gather(c, nil, recv, root); err != nil {
							return err
						}
						if err := equal(recv, all); err != nil {
							return fmt.Errorf("gather in place: %v", err)
						}
					} else if err := Gather(c, fill[uint32](r, n, false), nil, root); err != nil {
						return err
					}
					mine := make([]uint32, n)
					var src []uint32
					if r == root {
						src = all
					}
					if err := Scatter(c, src, mine, root); err != nil {
						return err
					}
					if err := equal(mine, fill[uint32](r, n, false)); err != nil {
						return fmt.Errorf("scatter p=%d n=%d root=%d: %v", p, n, root, err)
					}
					if r == root {
						return Scatter(c, src, nil, root) // in place
					}
					return Scatter(c, nil, mine, root)
				})
			}
		}
	}
}

func TestGathervScatterv(t *testing.T) {
	for p := 1; p <= 8; p++ {
		for _, scale := range []int{0, 1, 77} {
			counts := vcounts(p, scale)
			for _, root := range roots(p) {
				run(t, p, func(c *comm.Comm) error {
					r := c.Rank()
					var all []complex128
					for i := range p {
						for j := range counts[i] {
							all = append(all, complex(float64(i), float64(j)))
						}
					}
					mine := make([]complex128, counts[r])
					var src, recv []complex128
					var cnt []int
					if r == root {
						src, cnt, recv = all, counts, make([]complex128, len(all))
					}
					if err := Scatterv(c, src, cnt, nil, mine, root); err != nil {
						return err
					}
					for j := range mine {
						if mine[j] != complex(float64(r), float64(j)) {
							return fmt.Errorf("scatterv p=%d root=%d: rank %d elem %d = %v", p, root, r, j, mine[j])
						}
					}
					if err := Gatherv(c, mine, recv, cnt, nil, root); err != nil {
						return err
					}
					if r == root {
						return equal(recv, all)
					}
					return nil
				})
			}
		}
	}
}

func TestReduceScatter(t *testing.T) {
	for _, alg := range []string{AlgRing, AlgPairwise} {
		withTuning(t, func(tu *Tuning) { tu.ReduceScatterAlg = alg })
		for p := 1; p <= 8; p++ {
			for _, scale := range []int{0, 1, 50} {
				counts := vcounts(p, scale)
				total := 0
				for _, x := range counts {
					total += x
				}
				want := refReduce[float64]("Sum", 0, p, total)
				run(t, p, func(c *comm.Comm) error {
					r := c.Rank()
					off := 0
					for i := 0; i < r; i++ {
						off += counts[i]
					}
					in := fill[float64](r, total, false)
					recv := make([]float64, counts[r])
					if err := ReduceScatter(c, in, recv, counts, Sum[float64]()); err != nil {
						return err
					}
					if err := equal(recv, want[off:off+counts[r]]); err != nil {
						return fmt.Errorf("%s p=%d scale=%d: %v", alg, p, scale, err)
					}
					inplace := append([]float64(nil), in...)
					if err := ReduceScatter(c, nil, inplace, counts, Sum[float64]()); err != nil {
						return err
					}
					if err := equal(inplace[:counts[r]], want[off:off+counts[r]]); err != nil {
						return fmt.Errorf("%s in place p=%d: %v", alg, p, err)
					}
					// Block form.
					n := scale + 1
					blk := make([]float64, n)
					in = fill[float64](r, p*n, false)
					if err := ReduceScatterBlock(c, in, blk, Sum[float64]()); err != nil {
						return err
					}
					return equal(blk, refReduce[float64]("Sum", 0, p, p*n)[r*n:(r+1)*n])
				})
			}
		}
	}
}

func TestAlltoall(t *testing.T) {
	for p := 1; p <= 8; p++ {
		for _, n := range testSizes {
			run(t, p, func(c *comm.Comm) error {
				r := c.Rank()
				send := make([]int32, p*n)
				for j := range p {
					for k := range n {
						send[j*n+k] = int32(r*1000000 + j*1000 + k)
					}
				}
				recv := make([]int32, p*n)
				if err := Alltoall(c, send, recv); err != nil {
					return err
				}
				check := func(recv []int32) error {
					for i := range p {
						for k := range n {
							if want := int32(i*1000000 + r*1000 + k); recv[i*n+k] != want {
								return fmt.Errorf("alltoall p=%d n=%d: recv[%d] = %d, want %d", p, n, i*n+k, recv[i*n+k], want)
							}
						}
					}
					return nil
				}
				if err := check(recv); err != nil {
					return err
				}
				if err := Alltoall(c, nil, send); err != nil { // in place
					return err
				}
				return check(send)
			})
		}
	}
}

func TestAlltoallv(t *testing.T) {
	for p := 1; p <= 8; p++ {
		// Rank i sends (i+j)%3 elements to rank j.
		cnt := func(i, j int) int { return (i + j) % 3 }
		run(t, p, func(c *comm.Comm) error {
			r := c.Rank()
			sc, rc := make([]int, p), make([]int, p)
			var send []int
			for j := range p {
				sc[j], rc[j] = cnt(r, j), cnt(j, r)
				for k := range sc[j] {
					send = append(send, r*100+j*10+k)
				}
			}
			total := 0
			for _, x := range rc {
				total += x
			}
			recv := make([]int, total)
			if err := Alltoallv(c, send, sc, nil, recv, rc, nil); err != nil {
				return err
			}
			off := 0
			for i := range p {
				for k := range rc[i] {
					if want := i*100 + r*10 + k; recv[off+k] != want {
						return fmt.Errorf("alltoallv p=%d: from %d elem %d = %d, want %d", p, i, k, recv[off+k], want)
					}
				}
				off += rc[i]
			}
			return nil
		})
	}
}

func TestScan(t *testing.T) {
	for p := 1; p <= 8; p++ {
		for _, n := range testSizes {
			run(t, p, func(c *comm.Comm) error {
				r := c.Rank()
				in := fill[int32](r, n, false)
				out := make([]int32, n)
				if err := Scan(c, in, out, Sum[int32]()); err != nil {
					return err
				}
				if err := equal(out, refReduce[int32]("Sum", 0, r+1, n)); err != nil {
					return fmt.Errorf("scan p=%d n=%d: %v", p, n, err)
				}
				ex := make([]int32, n)
				for i := range ex {
					ex[i] = -77
				}
				if err := Exscan(c, in, ex, Sum[int32]()); err != nil {
					return err
				}
				if r == 0 {
					for _, v := range ex {
						if v != -77 {
							return fmt.Errorf("exscan touched rank 0's recv")
						}
					}
				} else if err := equal(ex, refReduce[int32]("Sum", 0, r, n)); err != nil {
					return fmt.Errorf("exscan p=%d n=%d: %v", p, n, err)
				}
				inplace := append([]int32(nil), in...)
				if err := Scan(c, nil, inplace, Max[int32]()); err != nil {
					return err
				}
				return equal(inplace, refReduce[int32]("Max", 0, r+1, n))
			})
		}
	}
}

// TestBarrier: in each round one rank enters late; nobody may leave before the last rank has
// entered (entry and exit times compared on the system's monotonic clock, which processes
// share).
func monotonicNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

func TestBarrier(t *testing.T) {
	for p := 1; p <= 8; p++ {
		const rounds = 12
		run(t, p, func(c *comm.Comm) error {
			enters := make([]int64, p)
			for k := range rounds {
				if c.Rank() == k%p {
					time.Sleep(2 * time.Millisecond)
				}
				enter := monotonicNow()
				if err := Barrier(c); err != nil {
					return err
				}
				exit := monotonicNow()
				if err := Allgather(c, []int64{enter}, enters); err != nil {
					return err
				}
				for r, e := range enters {
					if exit < e {
						return fmt.Errorf("p=%d round %d: left the barrier %v before rank %d entered", p, k, time.Duration(e-exit), r)
					}
				}
			}
			return nil
		})
	}
}

// TestNonBlockingOverlap starts several non-blocking collectives, does point-to-point traffic
// on the same communicator while they run, then waits for them in reverse order.
func TestNonBlockingOverlap(t *testing.T) {
	withTuning(t, func(tu *Tuning) { tu.RingSegment = 1024 })
	for _, p := range []int{2, 3, 4, 7} {
		n := 40000
		run(t, p, func(c *comm.Comm) error {
			r := c.Rank()
			a := fill[float64](r, n, false)
			ar := make([]float64, n)
			b := make([]int64, n)
			if r == 1%p {
				b = fill[int64](5, n, false)
			}
			g := make([]int32, p*3)
			q1 := Iallreduce(c, a, ar, Sum[float64]())
			q2 := Ibcast(c, b, 1%p)
			q3 := Iallgather(c, []int32{int32(r), int32(r * 2), int32(r * 3)}, g)
			small := make([]float64, 3)
			q4 := Iallreduce(c, []float64{1, 2, 3}, small, Sum[float64]())
			// User point-to-point with tag 0 must not be confused with collective traffic.
			got := make([]int, 1)
			if _, err := comm.Sendrecv(c, []int{r}, (r+1)%p, 0, got, (r-1+p)%p, 0); err != nil {
				return err
			}
			if got[0] != (r-1+p)%p {
				return fmt.Errorf("p2p got %d", got[0])
			}
			if err := comm.WaitAll(q4, q3, q2, q1); err != nil {
				return err
			}
			if err := equal(ar, refReduce[float64]("Sum", 0, p, n)); err != nil {
				return fmt.Errorf("iallreduce: %v", err)
			}
			if err := equal(b, fill[int64](5, n, false)); err != nil {
				return fmt.Errorf("ibcast: %v", err)
			}
			for i := range p {
				if g[3*i] != int32(i) || g[3*i+2] != int32(3*i) {
					return fmt.Errorf("iallgather: %v", g)
				}
			}
			return equal(small, []float64{float64(p), float64(2 * p), float64(3 * p)})
		})
	}
}
