package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/examples/internal/spmdtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { spmdtest.Main(m, main) }

// serial is the reference: one process plays every rank's stream and takes the mean gradient
// over the whole global batch, written out directly.
func serial(cfg config, p int) []float64 {
	truth := trueWeights(cfg.features)
	d := cfg.features
	rngs := make([]*rand.Rand, p)
	for r := range rngs {
		rngs[r] = rand.New(rand.NewPCG(cfg.seed, uint64(r)))
	}
	w := make([]float64, d+1)
	for step := 0; step < cfg.steps; step++ {
		var xs [][]float64
		var ys []float64
		for r := range rngs {
			b := draw(rngs[r], cfg.batch, truth)
			for s := range b.y {
				xs = append(xs, b.x[s*d:(s+1)*d])
				ys = append(ys, b.y[s])
			}
		}
		g := make([]float64, d+1)
		for s, x := range xs {
			e := w[d] - ys[s]
			for i := range x {
				e += w[i] * x[i]
			}
			for i := range x {
				g[i] += 2 * e * x[i]
			}
			g[d] += 2 * e
		}
		for i := range w {
			w[i] -= cfg.lr * g[i] / float64(len(ys))
		}
	}
	return w
}

func near(got, want []float64, tol float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d weights, want %d", len(got), len(want))
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > tol {
			return fmt.Errorf("weight %d: %v, want %v", i, got[i], want[i])
		}
	}
	return nil
}

func TestTrainMatchesSerial(t *testing.T) {
	cfg := config{features: 6, batch: 16, steps: 200, lr: 0.05, seed: 9}
	for p := 1; p <= 4; p++ {
		want := serial(cfg, p)
		err := comm.Run(p, func(c *comm.Comm) error {
			w, loss, err := train(c, cfg)
			if err != nil {
				return err
			}
			if loss > 0.05 {
				return fmt.Errorf("loss %v after %d steps", loss, cfg.steps)
			}
			// Summation order differs from the serial loop's: equal to rounding.
			if err := near(w, want, 1e-12); err != nil {
				return err
			}
			// Trained on data from the true model with noise 0.1, the weights approach it.
			return near(w, trueWeights(cfg.features), 0.05)
		})
		require.NoError(t, err, "%d ranks", p)
	}
}

func TestTrainErrors(t *testing.T) {
	err := comm.Run(2, func(c *comm.Comm) error {
		_, _, err := train(c, config{features: 0, batch: 1, steps: 1})
		return err
	})
	assert.ErrorContains(t, err, "features 0")
}

func TestProgram(t *testing.T) {
	cfg := config{features: 8, batch: 32, steps: 100, lr: 0.05, seed: 4}
	for _, job := range spmdtest.Jobs() {
		t.Run(job.String(), func(t *testing.T) {
			stdout := spmdtest.Run(t, job, "--features", "8", "--batch", "32", "--steps", "100", "--lr", "0.05", "--seed", "4", "--print", "50")
			assert.Contains(t, stdout, fmt.Sprintf("sgd: 100 steps on %d ranks (global batch %d): ", job.N, 32*job.N))
			assert.Regexp(t, `(?m)^step 50: loss \S+\nstep 100: loss \S+$`, stdout)
			m := regexp.MustCompile(`(?m)^weights: (.*)$`).FindStringSubmatch(stdout)
			require.NotNil(t, m, stdout)
			var w []float64
			for _, f := range strings.Fields(m[1]) {
				v, err := strconv.ParseFloat(f, 64)
				require.NoError(t, err)
				w = append(w, v)
			}
			require.NoError(t, near(w, serial(cfg, job.N), 1e-12))
			require.NoError(t, near(w, trueWeights(cfg.features), 0.05))
		})
	}
}
