// Command jacobi solves the steady-state heat equation (Laplace's equation) on a square plate
// whose top edge is held at 1 and other edges at 0, by Jacobi iteration on an n x n grid split
// into blocks over a 2-D Cartesian grid of ranks. Each iteration exchanges one-cell halos with
// the four neighbouring blocks and agrees on convergence with an Allreduce.
//
//	gorun -n 4 ./examples/jacobi --n 512 --tol 1e-4
//	gorun -n 4 ./examples/jacobi --halo sendrecv   # the same exchange written by hand
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/topology"
)

type config struct {
	n       int     // interior points per side
	tol     float64 // stop when no point changes by more than this in an iteration
	maxIter int
	halo    string // "alltoall" (one neighbour collective) or "sendrecv" (point-to-point)
}

type result struct {
	iters   int
	change  float64       // the largest change in the last iteration
	perIter time.Duration // wall time per iteration
	grid    []float64     // the n x n solution, row-major, on rank 0 only
	dims    []int         // the grid of ranks
}

func main() {
	var cfg config
	flag.IntVar(&cfg.n, "n", 256, "interior grid points per side")
	flag.Float64Var(&cfg.tol, "tol", 1e-4, "convergence tolerance on the largest change per iteration")
	flag.IntVar(&cfg.maxIter, "max-iter", 100000, "iteration limit")
	flag.StringVar(&cfg.halo, "halo", "alltoall", "halo exchange: alltoall (topology.NeighborAlltoallv) or sendrecv")
	out := flag.String("out", "", "write the solution to this file (rank 0)")
	flag.Parse()

	c, err := comm.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "jacobi:", err)
		os.Exit(1)
	}
	res, err := solve(c, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "jacobi: rank %d: %v\n", c.Rank(), err)
		os.Exit(1)
	}
	if c.Rank() == 0 {
		fmt.Printf("jacobi: %d x %d grid on %d x %d ranks (halo: %s): %d iterations, last change %.3g, %.2f us per iteration\n",
			cfg.n, cfg.n, res.dims[0], res.dims[1], cfg.halo, res.iters, res.change, float64(res.perIter.Nanoseconds())/1e3)
		if *out != "" {
			if err := writeGrid(*out, cfg.n, res.grid); err != nil {
				fmt.Fprintln(os.Stderr, "jacobi:", err)
				os.Exit(1)
			}
		}
	}
	if err := c.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "jacobi:", err)
		os.Exit(1)
	}
}

// span splits n points into parts nearly equal ranges and returns the i-th: its first index
// and length (the first n%parts ranges have one point more).
func span(n, parts, i int) (first, length int) {
	length = n / parts
	if i < n%parts {
		return i * (length + 1), length + 1
	}
	return i*length + n%parts, length
}

func solve(c *comm.Comm, cfg config) (*result, error) {
	if cfg.halo != "alltoall" && cfg.halo != "sendrecv" {
		return nil, fmt.Errorf("--halo %q: want alltoall or sendrecv", cfg.halo)
	}
	// A balanced P x Q grid of ranks, not periodic (the plate has edges); reorder lets the
	// library put neighbouring blocks on one host.
	cart, err := topology.NewCart(c, []int{0, 0}, []bool{false, false}, true)
	if err != nil {
		return nil, err
	}
	dims, me := cart.Dims(), cart.Coords()
	if cfg.n < dims[0] || cfg.n < dims[1] {
		return nil, fmt.Errorf("a %d x %d grid cannot be split over %d x %d ranks", cfg.n, cfg.n, dims[0], dims[1])
	}
	_, rows := span(cfg.n, dims[0], me[0])
	_, cols := span(cfg.n, dims[1], me[1])

	// The local block with a one-cell halo all round: (rows+2) x (cols+2), row-major.
	// Halo cells on the plate's edges hold the boundary temperature and are never
	// overwritten: the neighbour collective leaves slots without a neighbour alone.
	w := cols + 2
	u, next := make([]float64, (rows+2)*w), make([]float64, (rows+2)*w)
	if me[0] == 0 {
		for j := 1; j <= cols; j++ {
			u[j], next[j] = 1, 1 // the hot top edge
		}
	}

	// Halo buffers in the slot order of a 2-D Cart: up (-1 along dim 0), down, left (-1
	// along dim 1), right. Rows are cols long, columns rows long.
	counts := []int{cols, cols, rows, rows}
	displs := []int{0, cols, 2 * cols, 2*cols + rows}
	send, recv := make([]float64, 2*cols+2*rows), make([]float64, 2*cols+2*rows)
	copy(recv[0:cols], u[1:1+cols]) // the top edge's temperature, kept where no neighbour writes
	up, down, _ := cart.Shift(0, 1)
	left, right, _ := cart.Shift(1, 1)
	cc := cart.Comm()
	reqs := make([]*comm.Request, 0, 8) // the hand-written exchange's requests, reused

	exchange := func(u []float64) error {
		for j := 0; j < cols; j++ {
			send[j] = u[1*w+1+j]         // my first row goes up
			send[cols+j] = u[rows*w+1+j] // my last row goes down
		}
		for i := 0; i < rows; i++ {
			send[2*cols+i] = u[(i+1)*w+1]         // first column, left
			send[2*cols+rows+i] = u[(i+1)*w+cols] // last column, right
		}
		if cfg.halo == "alltoall" {
			if err := topology.NeighborAlltoallv(cart, send, counts, displs, recv, counts, displs); err != nil {
				return err
			}
		} else {
			// The same exchange by hand: receive each side from its neighbour, skipping
			// the plate's edges (topology.ProcNull), and send each side the other way.
			reqs = reqs[:0]
			for s, nb := range []int{up, down, left, right} {
				if nb == topology.ProcNull {
					continue
				}
				// The message from my upper neighbour is its bottom row (tag 1: "down").
				reqs = append(reqs, comm.Irecv(cc, recv[displs[s]:displs[s]+counts[s]], nb, s^1))
				reqs = append(reqs, comm.Isend(cc, send[displs[s]:displs[s]+counts[s]], nb, s))
			}
			if err := comm.WaitAll(reqs...); err != nil {
				return err
			}
		}
		for j := 0; j < cols; j++ {
			u[j+1] = recv[j]
			u[(rows+1)*w+1+j] = recv[cols+j]
		}
		for i := 0; i < rows; i++ {
			u[(i+1)*w] = recv[2*cols+i]
			u[(i+1)*w+cols+1] = recv[2*cols+rows+i]
		}
		return nil
	}

	res := &result{dims: dims}
	local, global := []float64{0}, []float64{0}
	if err := collectives.Barrier(cc); err != nil { // start the clock together
		return nil, err
	}
	start := time.Now()
	for res.iters < cfg.maxIter {
		if err := exchange(u); err != nil {
			return nil, err
		}
		change := 0.0
		for i := 1; i <= rows; i++ {
			for j := 1; j <= cols; j++ {
				k := i*w + j
				v := 0.25 * (u[k-w] + u[k+w] + u[k-1] + u[k+1])
				// A plain comparison: math.Max (NaN and signed-zero rules) is a call here.
				if d := math.Abs(v - u[k]); d > change {
					change = d
				}
				next[k] = v
			}
		}
		u, next = next, u
		res.iters++
		// Every rank must stop at the same iteration: agree on the largest change.
		local[0] = change
		if err := collectives.Allreduce(cc, local, global, collectives.Max[float64]()); err != nil {
			return nil, err
		}
		res.change = global[0]
		if global[0] < cfg.tol {
			break
		}
	}
	res.perIter = time.Since(start) / time.Duration(max(res.iters, 1))
	res.grid, err = gather(cart, cfg.n, rows, cols, u)
	return res, err
}

// gather collects the blocks on rank 0 of the Cart, which places each by its owner's
// coordinates; it returns the n x n grid there and nil elsewhere.
func gather(cart *topology.Cart, n, rows, cols int, u []float64) ([]float64, error) {
	w := cols + 2
	block := make([]float64, 0, rows*cols)
	for i := 1; i <= rows; i++ {
		block = append(block, u[i*w+1:i*w+1+cols]...)
	}
	const tag = 99
	if cart.Rank() != 0 {
		return nil, comm.Send(cart.Comm(), block, 0, tag)
	}
	grid, dims := make([]float64, n*n), cart.Dims()
	for r := 0; r < cart.Size(); r++ {
		co, err := cart.CoordsOf(r)
		if err != nil {
			return nil, err
		}
		r0, rn := span(n, dims[0], co[0])
		c0, cn := span(n, dims[1], co[1])
		b := block
		if r != 0 {
			b = make([]float64, rn*cn)
			if _, err := comm.Recv(cart.Comm(), b, r, tag); err != nil {
				return nil, err
			}
		}
		for i := 0; i < rn; i++ {
			copy(grid[(r0+i)*n+c0:(r0+i)*n+c0+cn], b[i*cn:(i+1)*cn])
		}
	}
	return grid, nil
}

// writeGrid writes the grid as text: "n n", then one line of n values per row.
func writeGrid(path string, n int, grid []float64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "%d %d\n", n, n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if j > 0 {
				w.WriteByte(' ')
			}
			w.WriteString(strconv.FormatFloat(grid[i*n+j], 'g', 17, 64))
		}
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
