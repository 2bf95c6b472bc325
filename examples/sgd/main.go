// Command sgd trains a linear regression model with data-parallel minibatch SGD: every rank
// draws its share of each global batch from its own random stream, computes the gradient on
// it, and the ranks sum their gradients with an Iallreduce. While that reduction is in flight
// the rank prepares its next batch (here: draws it; in a real program: loads and decodes it),
// so the communication hides behind work that does not need the new weights.
//
//	gorun -n 4 ./examples/sgd --steps 500 --batch 256
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
)

type config struct {
	features int     // model inputs
	batch    int     // samples per rank per step (the global batch is batch x ranks)
	steps    int     // SGD steps
	lr       float64 // learning rate
	seed     uint64
	print    int // report the loss every this many steps on rank 0 (0: never)
}

// batch is a set of samples: x is len(y) rows of features values.
type batch struct {
	x, y []float64
}

func main() {
	var cfg config
	flag.IntVar(&cfg.features, "features", 16, "model inputs")
	flag.IntVar(&cfg.batch, "batch", 64, "samples per rank per step")
	flag.IntVar(&cfg.steps, "steps", 300, "SGD steps")
	flag.Float64Var(&cfg.lr, "lr", 0.05, "learning rate")
	flag.Uint64Var(&cfg.seed, "seed", 1, "seed of the data")
	flag.IntVar(&cfg.print, "print", 100, "report the loss every this many steps (0: never)")
	flag.Parse()

	c, err := comm.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sgd:", err)
		os.Exit(1)
	}
	start := time.Now()
	w, loss, err := train(c, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sgd: rank %d: %v\n", c.Rank(), err)
		os.Exit(1)
	}
	if c.Rank() == 0 {
		dist := 0.0
		for i, v := range trueWeights(cfg.features) {
			dist = math.Max(dist, math.Abs(w[i]-v))
		}
		fmt.Printf("sgd: %d steps on %d ranks (global batch %d): last loss %.6g, weights within %.3g of the true ones, %.1f us per step\n",
			cfg.steps, c.Size(), cfg.batch*c.Size(), loss, dist, float64(time.Since(start).Microseconds())/float64(max(cfg.steps, 1)))
		s := make([]string, len(w))
		for i, v := range w {
			s[i] = strconv.FormatFloat(v, 'g', 17, 64)
		}
		fmt.Printf("weights: %s\n", strings.Join(s, " "))
	}
	if err := c.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "sgd:", err)
		os.Exit(1)
	}
}

// trueWeights are the model that generates the data: features weights, then the bias.
func trueWeights(features int) []float64 {
	w := make([]float64, features+1)
	for i := range features {
		w[i] = math.Sin(float64(i + 1))
	}
	w[features] = 0.5
	return w
}

// draw makes the next batch of n samples from rng: standard normal inputs, and the true
// model's output plus noise.
func draw(rng *rand.Rand, n int, truth []float64) batch {
	d := len(truth) - 1
	b := batch{x: make([]float64, n*d), y: make([]float64, n)}
	for s := 0; s < n; s++ {
		y := truth[d]
		for i := 0; i < d; i++ {
			v := rng.NormFloat64()
			b.x[s*d+i] = v
			y += truth[i] * v
		}
		b.y[s] = y + 0.1*rng.NormFloat64()
	}
	return b
}

// gradient adds to g (features weights, the bias, then the loss) this batch's share of the
// global batch's mean squared error and its gradient; total is the global batch size.
func gradient(w []float64, b batch, total int, g []float64) {
	d := len(w) - 1
	for s := range b.y {
		x := b.x[s*d : (s+1)*d]
		pred := w[d]
		for i, v := range x {
			pred += w[i] * v
		}
		e := pred - b.y[s]
		for i, v := range x {
			g[i] += 2 * e * v / float64(total)
		}
		g[d] += 2 * e / float64(total)
		g[d+1] += e * e / float64(total)
	}
}

// train runs the SGD steps and returns the weights (the same on every rank: Allreduce gives
// every rank bitwise the same sum) and the last step's loss.
func train(c *comm.Comm, cfg config) ([]float64, float64, error) {
	if cfg.features < 1 || cfg.batch < 1 || cfg.steps < 0 {
		return nil, 0, fmt.Errorf("features %d, batch %d, steps %d: want at least 1, 1 and 0", cfg.features, cfg.batch, cfg.steps)
	}
	truth := trueWeights(cfg.features)
	// Per-rank streams: one seed, the rank as the stream number, so ranks draw independent
	// data and a run is reproducible for a given seed and rank count.
	rng := rand.New(rand.NewPCG(cfg.seed, uint64(c.Rank())))
	total := cfg.batch * c.Size()
	w := make([]float64, cfg.features+1)
	g := make([]float64, cfg.features+2) // the gradient, then the loss: one reduction for both
	loss := math.NaN()
	cur := draw(rng, cfg.batch, truth)
	for step := 0; step < cfg.steps; step++ {
		clear(g)
		gradient(w, cur, total, g)
		req := collectives.Iallreduce(c, nil, g, collectives.Sum[float64]())
		// Overlap: the next batch does not depend on the new weights.
		if step+1 < cfg.steps {
			cur = draw(rng, cfg.batch, truth)
		}
		if _, err := req.Wait(); err != nil {
			return nil, 0, fmt.Errorf("step %d: %w", step, err)
		}
		for i := range w {
			w[i] -= cfg.lr * g[i]
		}
		loss = g[cfg.features+1]
		if cfg.print > 0 && (step+1)%cfg.print == 0 && c.Rank() == 0 {
			fmt.Printf("step %d: loss %.6g\n", step+1, loss)
		}
	}
	return w, loss, nil
}
