// Command montecarlo prices a European call option by Monte Carlo simulation under the
// Black-Scholes model, with the paths split over the ranks. Each rank draws from its own
// random stream (one seed, the rank as the stream number: independent streams, and a run that
// is reproducible for a given seed and rank count), and a Reduce sums the payoffs on rank 0,
// which prints the estimate with its standard error next to the closed-form price.
//
//	gorun -n 4 ./examples/montecarlo --paths 100000000
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"time"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
)

// option is a European call: the right to buy at strike at maturity (years), on an asset at
// spot today with volatility sigma, discounted at the risk-free rate.
type option struct {
	spot, strike, rate, sigma, maturity float64
}

func main() {
	o := option{}
	flag.Float64Var(&o.spot, "spot", 100, "asset price today")
	flag.Float64Var(&o.strike, "strike", 100, "strike price")
	flag.Float64Var(&o.rate, "rate", 0.05, "risk-free rate (continuous, per year)")
	flag.Float64Var(&o.sigma, "sigma", 0.2, "volatility (per sqrt(year))")
	flag.Float64Var(&o.maturity, "maturity", 1, "years to maturity")
	paths := flag.Int64("paths", 10_000_000, "simulated paths in all")
	seed := flag.Uint64("seed", 1, "seed of the random streams")
	flag.Parse()

	c, err := comm.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "montecarlo:", err)
		os.Exit(1)
	}
	start := time.Now()
	price, stderr, err := estimate(c, o, *paths, *seed)
	if err != nil {
		fmt.Fprintf(os.Stderr, "montecarlo: rank %d: %v\n", c.Rank(), err)
		os.Exit(1)
	}
	if c.Rank() == 0 {
		fmt.Printf("montecarlo: %d paths on %d ranks in %.3f s: price %.8f, standard error %.3g; Black-Scholes %.8f\n",
			*paths, c.Size(), time.Since(start).Seconds(), price, stderr, blackScholes(o))
	}
	if err := c.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "montecarlo:", err)
		os.Exit(1)
	}
}

// share is how many of n paths rank r of p simulates (the first n%p ranks one more).
func share(n int64, p, r int) int64 {
	k := n / int64(p)
	if int64(r) < n%int64(p) {
		k++
	}
	return k
}

// simulate draws n terminal asset prices from rng and returns the sum of the discounted
// payoffs and of their squares.
func simulate(o option, rng *rand.Rand, n int64) (sum, sumSq float64) {
	drift := (o.rate - o.sigma*o.sigma/2) * o.maturity
	vol := o.sigma * math.Sqrt(o.maturity)
	disc := math.Exp(-o.rate * o.maturity)
	for i := int64(0); i < n; i++ {
		st := o.spot * math.Exp(drift+vol*rng.NormFloat64())
		pay := disc * math.Max(st-o.strike, 0)
		sum += pay
		sumSq += pay * pay
	}
	return sum, sumSq
}

// estimate returns, on rank 0, the mean discounted payoff over all ranks' paths and its
// standard error.
func estimate(c *comm.Comm, o option, paths int64, seed uint64) (price, stderr float64, err error) {
	if paths < 2 || o.spot <= 0 || o.strike < 0 || o.sigma < 0 || o.maturity < 0 {
		return 0, 0, fmt.Errorf("paths %d, spot %g, strike %g, sigma %g, maturity %g: want at least 2 paths, a positive spot and no negative others",
			paths, o.spot, o.strike, o.sigma, o.maturity)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(c.Rank())))
	sum, sumSq := simulate(o, rng, share(paths, c.Size(), c.Rank()))
	total := []float64{0, 0}
	if err := collectives.Reduce(c, []float64{sum, sumSq}, total, collectives.Sum[float64](), 0); err != nil {
		return 0, 0, err
	}
	n := float64(paths)
	mean := total[0] / n
	variance := (total[1] - n*mean*mean) / (n - 1)
	return mean, math.Sqrt(math.Max(variance, 0) / n), nil
}

// blackScholes is the closed-form price of the option.
func blackScholes(o option) float64 {
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	sq := o.sigma * math.Sqrt(o.maturity)
	d1 := (math.Log(o.spot/o.strike) + (o.rate+o.sigma*o.sigma/2)*o.maturity) / sq
	return o.spot*phi(d1) - o.strike*math.Exp(-o.rate*o.maturity)*phi(d1-sq)
}
