package main

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/examples/internal/spmdtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { spmdtest.Main(m, main) }

// serial is the reference: Jacobi on the whole grid in one piece, the boundary in a frame
// around it.
func serial(n int, tol float64, maxIter int) (grid []float64, iters int) {
	w := n + 2
	u, next := make([]float64, w*w), make([]float64, w*w)
	for j := 1; j <= n; j++ {
		u[j], next[j] = 1, 1
	}
	for iters < maxIter {
		change := 0.0
		for i := 1; i <= n; i++ {
			for j := 1; j <= n; j++ {
				k := i*w + j
				v := 0.25 * (u[k-w] + u[k+w] + u[k-1] + u[k+1])
				change = math.Max(change, math.Abs(v-u[k]))
				next[k] = v
			}
		}
		u, next = next, u
		iters++
		if change < tol {
			break
		}
	}
	grid = make([]float64, 0, n*n)
	for i := 1; i <= n; i++ {
		grid = append(grid, u[i*w+1:i*w+1+n]...)
	}
	return grid, iters
}

// The parallel solver does the same arithmetic on every point as the serial one, so the
// solutions and iteration counts are equal exactly.
func TestSolveMatchesSerial(t *testing.T) {
	for _, c := range []struct {
		n       int
		tol     float64
		maxIter int
	}{{17, 1e-4, 100000}, {24, 1e-9, 300}, {5, 1e-3, 100000}} {
		want, wantIters := serial(c.n, c.tol, c.maxIter)
		for p := 1; p <= 4; p++ {
			for _, halo := range []string{"alltoall", "sendrecv"} {
				err := comm.Run(p, func(cm *comm.Comm) error {
					res, err := solve(cm, config{n: c.n, tol: c.tol, maxIter: c.maxIter, halo: halo})
					if err != nil || cm.Rank() != 0 {
						return err
					}
					if res.iters != wantIters {
						return fmt.Errorf("%d iterations, serial %d", res.iters, wantIters)
					}
					for i := range want {
						if res.grid[i] != want[i] {
							return fmt.Errorf("point %d: %v, serial %v", i, res.grid[i], want[i])
						}
					}
					return nil
				})
				require.NoError(t, err, "n=%d p=%d halo=%s", c.n, p, halo)
			}
		}
	}
}

func TestSolveErrors(t *testing.T) {
	err := comm.Run(4, func(c *comm.Comm) error {
		_, err := solve(c, config{n: 1, tol: 1e-3, maxIter: 10, halo: "alltoall"})
		return err
	})
	assert.ErrorContains(t, err, "cannot be split over 2 x 2 ranks")
	err = comm.Run(1, func(c *comm.Comm) error {
		_, err := solve(c, config{n: 8, tol: 1e-3, maxIter: 10, halo: "carrier pigeon"})
		return err
	})
	assert.ErrorContains(t, err, `--halo "carrier pigeon"`)
}

// TestProgram runs the program under gorun as processes and compares its --out file with the
// serial solution.
func TestProgram(t *testing.T) {
	const n, tol = 20, 1e-4
	want, wantIters := serial(n, tol, 100000)
	for i, job := range spmdtest.Jobs() {
		halo := []string{"alltoall", "sendrecv"}[i%2]
		t.Run(job.String(), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "grid.txt")
			stdout := spmdtest.Run(t, job, "--n", strconv.Itoa(n), "--tol", "1e-4", "--halo", halo, "--out", out)
			m := regexp.MustCompile(`^jacobi: 20 x 20 grid on (\d) x (\d) ranks \(halo: (\w+)\): (\d+) iterations`).FindStringSubmatch(stdout)
			require.NotNil(t, m, stdout)
			p, _ := strconv.Atoi(m[1])
			q, _ := strconv.Atoi(m[2])
			assert.Equal(t, job.N, p*q)
			assert.Equal(t, halo, m[3])
			assert.Equal(t, strconv.Itoa(wantIters), m[4])
			rows, cols, got, err := spmdtest.ReadMatrix(out)
			require.NoError(t, err)
			require.Equal(t, []int{n, n}, []int{rows, cols})
			assert.Equal(t, want, got)
		})
	}
}
