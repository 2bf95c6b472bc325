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
	"gonum.org/v1/gonum/mat"
)

func TestMain(m *testing.M) { spmdtest.Main(m, main) }

// reference computes A*B with gonum from the same entries.
func reference(cfg config) []float64 {
	a := mat.NewDense(cfg.m, cfg.k, nil)
	b := mat.NewDense(cfg.k, cfg.n, nil)
	for i := 0; i < cfg.m; i++ {
		for j := 0; j < cfg.k; j++ {
			a.Set(i, j, entry(cfg.seed, 'A', i, j))
		}
	}
	for i := 0; i < cfg.k; i++ {
		for j := 0; j < cfg.n; j++ {
			b.Set(i, j, entry(cfg.seed, 'B', i, j))
		}
	}
	var c mat.Dense
	c.Mul(a, b)
	return c.RawMatrix().Data
}

// close reports the first element of got that differs from want by more than the rounding of
// a k-term dot product of entries in [-1, 1) allows.
func closeTo(got, want []float64, k int) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d elements, want %d", len(got), len(want))
	}
	tol := 4 * float64(k) * 0x1p-52
	for i := range want {
		if math.Abs(got[i]-want[i]) > tol {
			return fmt.Errorf("element %d: %v, gonum %v", i, got[i], want[i])
		}
	}
	return nil
}

func TestMultiplyMatchesGonum(t *testing.T) {
	for _, cfg := range []config{
		{m: 37, n: 29, k: 41, nb: 8, seed: 1},
		{m: 16, n: 16, k: 16, nb: 64, seed: 2},
		{m: 5, n: 7, k: 4, nb: 1, seed: 3},
	} {
		want := reference(cfg)
		for p := 1; p <= 4; p++ {
			err := comm.Run(p, func(c *comm.Comm) error {
				got, _, err := multiply(c, cfg)
				if err != nil || c.Rank() != 0 {
					return err
				}
				return closeTo(got, want, cfg.k)
			})
			require.NoError(t, err, "%+v on %d ranks", cfg, p)
		}
	}
}

func TestMultiplyErrors(t *testing.T) {
	err := comm.Run(4, func(c *comm.Comm) error {
		_, _, err := multiply(c, config{m: 1, n: 8, k: 8, nb: 4})
		return err
	})
	assert.ErrorContains(t, err, "want m >= 2, n >= 2, k >= 2")
}

func TestProgram(t *testing.T) {
	cfg := config{m: 50, n: 40, k: 30, nb: 7, seed: 5}
	want := reference(cfg)
	for _, job := range spmdtest.Jobs() {
		t.Run(job.String(), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "c.txt")
			stdout := spmdtest.Run(t, job, "--m", "50", "--n", "40", "--k", "30", "--nb", "7", "--seed", "5", "--out", out)
			m := regexp.MustCompile(`^summa: 50 x 40 x 30 on (\d) x (\d) ranks, panels of 7: `).FindStringSubmatch(stdout)
			require.NotNil(t, m, stdout)
			p, _ := strconv.Atoi(m[1])
			q, _ := strconv.Atoi(m[2])
			assert.Equal(t, job.N, p*q)
			rows, cols, got, err := spmdtest.ReadMatrix(out)
			require.NoError(t, err)
			require.Equal(t, []int{50, 40}, []int{rows, cols})
			require.NoError(t, closeTo(got, want, cfg.k))
		})
	}
}
