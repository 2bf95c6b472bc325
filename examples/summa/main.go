// Command summa multiplies C = A*B with SUMMA (the Scalable Universal Matrix Multiplication
// Algorithm, as in ScaLAPACK's PDGEMM): A, B and C are split into blocks over a P x Q grid of
// ranks; for each panel of k, the ranks owning that panel of A broadcast it along their grid
// row, the owners of that panel of B broadcast it down their grid column, and every rank adds
// the product of the two panels to its block of C with a local Dgemm.
//
//	gorun -n 4 ./examples/summa --m 2048 --n 2048 --k 2048 --nb 128
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/linalg"
	"github.com/gorun-hpc/gorun/topology"
)

type config struct {
	m, n, k int    // C is m x n, A m x k, B k x n
	nb      int    // panel width
	seed    uint64 // the inputs' entries are a function of seed and their indices
}

func main() {
	var cfg config
	flag.IntVar(&cfg.m, "m", 1024, "rows of A and C")
	flag.IntVar(&cfg.n, "n", 1024, "columns of B and C")
	flag.IntVar(&cfg.k, "k", 1024, "columns of A, rows of B")
	flag.IntVar(&cfg.nb, "nb", 128, "panel width")
	flag.Uint64Var(&cfg.seed, "seed", 1, "seed of the input matrices")
	out := flag.String("out", "", "write C to this file (rank 0)")
	flag.Parse()

	c, err := comm.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "summa:", err)
		os.Exit(1)
	}
	start := time.Now()
	cm, dims, err := multiply(c, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "summa: rank %d: %v\n", c.Rank(), err)
		os.Exit(1)
	}
	if c.Rank() == 0 {
		el := time.Since(start)
		fmt.Printf("summa: %d x %d x %d on %d x %d ranks, panels of %d: %.3f s, %.2f Gflop/s\n",
			cfg.m, cfg.n, cfg.k, dims[0], dims[1], cfg.nb, el.Seconds(), 2*float64(cfg.m)*float64(cfg.n)*float64(cfg.k)/el.Seconds()/1e9)
		if *out != "" {
			if err := writeMatrix(*out, cfg.m, cfg.n, cm); err != nil {
				fmt.Fprintln(os.Stderr, "summa:", err)
				os.Exit(1)
			}
		}
	}
	if err := c.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "summa:", err)
		os.Exit(1)
	}
}

// entry is element (i, j) of input matrix which ('A' or 'B'): a hash of its indices mapped to
// [-1, 1), so that every rank fills its own blocks without communication.
func entry(seed uint64, which byte, i, j int) float64 {
	x := seed ^ uint64(which)<<56 ^ uint64(i)<<28 ^ uint64(j)
	x += 0x9e3779b97f4a7c15 // splitmix64
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11)/(1<<52) - 1
}

// span splits n into parts nearly equal ranges and returns the i-th (first index, length).
func span(n, parts, i int) (first, length int) {
	length = n / parts
	if i < n%parts {
		return i * (length + 1), length + 1
	}
	return i*length + n%parts, length
}

// owner returns which of parts ranges of n (as span splits it) holds index x, and its range.
func owner(n, parts, x int) (who, first, length int) {
	for who = 0; who < parts; who++ {
		if first, length = span(n, parts, who); x < first+length {
			return who, first, length
		}
	}
	panic("index outside the matrix") // x < n always: the caller loops over [0, n)
}

// multiply computes C = A*B and returns C (row-major) on rank 0 and the grid of ranks.
func multiply(c *comm.Comm, cfg config) ([]float64, []int, error) {
	cart, err := topology.NewCart(c, []int{0, 0}, nil, true)
	if err != nil {
		return nil, nil, err
	}
	dims, me := cart.Dims(), cart.Coords()
	P, Q := dims[0], dims[1]
	if cfg.m < P || cfg.n < Q || cfg.k < max(P, Q) || cfg.nb < 1 {
		return nil, nil, fmt.Errorf("m=%d n=%d k=%d nb=%d: want m >= %d, n >= %d, k >= %d and nb >= 1 on a %d x %d grid",
			cfg.m, cfg.n, cfg.k, cfg.nb, P, Q, max(P, Q), P, Q)
	}
	// Row communicator: the ranks of my grid row (its rank is my column); column
	// communicator: those of my grid column (its rank is my row).
	row, err := cart.Sub([]bool{false, true})
	if err != nil {
		return nil, nil, err
	}
	col, err := cart.Sub([]bool{true, false})
	if err != nil {
		return nil, nil, err
	}

	// My blocks, column-major as Dgemm takes them: A rows i0.. (mi of them) by k-columns
	// ka0.. (kal), B k-rows kb0.. (kbl) by columns j0.. (nj), C mi x nj.
	i0, mi := span(cfg.m, P, me[0])
	j0, nj := span(cfg.n, Q, me[1])
	ka0, kal := span(cfg.k, Q, me[1])
	kb0, kbl := span(cfg.k, P, me[0])
	a := make([]float64, mi*kal)
	for j := 0; j < kal; j++ {
		for i := 0; i < mi; i++ {
			a[j*mi+i] = entry(cfg.seed, 'A', i0+i, ka0+j)
		}
	}
	b := make([]float64, kbl*nj)
	for j := 0; j < nj; j++ {
		for i := 0; i < kbl; i++ {
			b[j*kbl+i] = entry(cfg.seed, 'B', kb0+i, j0+j)
		}
	}
	cb := make([]float64, mi*nj)
	apanel, bpanel := make([]float64, mi*cfg.nb), make([]float64, cfg.nb*nj)

	for k0 := 0; k0 < cfg.k; {
		// The panel [k0, k0+w) lies in one owner's block of A's columns and of B's rows.
		qa, fa, la := owner(cfg.k, Q, k0)
		pb, fb, lb := owner(cfg.k, P, k0)
		w := min(cfg.nb, fa+la-k0, fb+lb-k0)
		ap, bp := apanel[:mi*w], bpanel[:w*nj]
		if me[1] == qa {
			copy(ap, a[(k0-ka0)*mi:(k0-ka0+w)*mi]) // w whole columns: contiguous
		}
		if me[0] == pb {
			for j := 0; j < nj; j++ { // w rows of each column
				copy(bp[j*w:(j+1)*w], b[j*kbl+k0-kb0:j*kbl+k0-kb0+w])
			}
		}
		if err := collectives.Bcast(row.Comm(), ap, qa); err != nil {
			return nil, nil, err
		}
		if err := collectives.Bcast(col.Comm(), bp, pb); err != nil {
			return nil, nil, err
		}
		linalg.Dgemm(linalg.NoTrans, linalg.NoTrans, mi, nj, w, 1, ap, max(mi, 1), bp, max(w, 1), 1, cb, max(mi, 1))
		k0 += w
	}
	cm, err := gather(cart, cfg, cb)
	return cm, dims, err
}

// gather sends every block of C to rank 0 of the Cart, which places each (column-major
// block) into the row-major m x n result by its owner's coordinates.
func gather(cart *topology.Cart, cfg config, cb []float64) ([]float64, error) {
	const tag = 7
	if cart.Rank() != 0 {
		return nil, comm.Send(cart.Comm(), cb, 0, tag)
	}
	dims := cart.Dims()
	cm := make([]float64, cfg.m*cfg.n)
	for r := 0; r < cart.Size(); r++ {
		co, err := cart.CoordsOf(r)
		if err != nil {
			return nil, err
		}
		i0, mi := span(cfg.m, dims[0], co[0])
		j0, nj := span(cfg.n, dims[1], co[1])
		blk := cb
		if r != 0 {
			blk = make([]float64, mi*nj)
			if _, err := comm.Recv(cart.Comm(), blk, r, tag); err != nil {
				return nil, err
			}
		}
		for j := 0; j < nj; j++ {
			for i := 0; i < mi; i++ {
				cm[(i0+i)*cfg.n+j0+j] = blk[j*mi+i]
			}
		}
	}
	return cm, nil
}

// writeMatrix writes an m x n row-major matrix as text: "m n", then one line per row.
func writeMatrix(path string, m, n int, a []float64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "%d %d\n", m, n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			if j > 0 {
				w.WriteByte(' ')
			}
			w.WriteString(strconv.FormatFloat(a[i*n+j], 'g', 17, 64))
		}
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
