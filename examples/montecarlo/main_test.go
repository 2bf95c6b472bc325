package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/examples/internal/spmdtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { spmdtest.Main(m, main) }

var atm = option{spot: 100, strike: 100, rate: 0.05, sigma: 0.2, maturity: 1}

// The textbook at-the-money example: S = K = 100, r = 5%, sigma = 20%, T = 1 year.
const atmPrice = 10.450583572185565

func TestBlackScholes(t *testing.T) {
	assert.InDelta(t, atmPrice, blackScholes(atm), 1e-12)
	// Deep in the money, the call is worth the spot less the discounted strike.
	assert.InDelta(t, 200-50*math.Exp(-0.05), blackScholes(option{spot: 200, strike: 50, rate: 0.05, sigma: 0.2, maturity: 1}), 1e-9)
}

// serial replays every rank's stream in one loop, path by path.
func serial(o option, paths int64, seed uint64, p int) float64 {
	sum := 0.0
	for r := 0; r < p; r++ {
		rng := rand.New(rand.NewPCG(seed, uint64(r)))
		for i := int64(0); i < share(paths, p, r); i++ {
			z := rng.NormFloat64()
			st := o.spot * math.Exp((o.rate-o.sigma*o.sigma/2)*o.maturity+o.sigma*math.Sqrt(o.maturity)*z)
			sum += math.Exp(-o.rate*o.maturity) * math.Max(st-o.strike, 0)
		}
	}
	return sum / float64(paths)
}

func TestEstimate(t *testing.T) {
	const paths = 200_001
	for p := 1; p <= 4; p++ {
		want := serial(atm, paths, 11, p)
		err := comm.Run(p, func(c *comm.Comm) error {
			price, se, err := estimate(c, atm, paths, 11)
			if err != nil || c.Rank() != 0 {
				return err
			}
			// The ranks' streams, reduced, are the serial replay of the same streams.
			if math.Abs(price-want) > 1e-9 {
				return fmt.Errorf("price %v, serial replay %v", price, want)
			}
			// And the estimate is a sound one: within 5 standard errors of the closed form,
			// with the error the variance of this payoff (~14.7) predicts.
			if math.Abs(price-atmPrice) > 5*se || se < 0.02 || se > 0.05 {
				return fmt.Errorf("price %v +- %v, Black-Scholes %v", price, se, atmPrice)
			}
			return nil
		})
		require.NoError(t, err, "%d ranks", p)
	}
	// Another seed gives another estimate: the streams depend on it.
	assert.NotEqual(t, serial(atm, 1000, 11, 2), serial(atm, 1000, 12, 2))
}

func TestEstimateErrors(t *testing.T) {
	err := comm.Run(2, func(c *comm.Comm) error {
		_, _, err := estimate(c, atm, 1, 1)
		return err
	})
	assert.ErrorContains(t, err, "want at least 2 paths")
}

func TestProgram(t *testing.T) {
	const paths = 100_003
	for _, job := range spmdtest.Jobs() {
		t.Run(job.String(), func(t *testing.T) {
			stdout := spmdtest.Run(t, job, "--paths", strconv.Itoa(paths), "--seed", "5")
			m := regexp.MustCompile(fmt.Sprintf(`^montecarlo: %d paths on %d ranks in \S+ s: price (\S+), standard error (\S+); Black-Scholes (\S+)\n$`, paths, job.N)).FindStringSubmatch(stdout)
			require.NotNil(t, m, stdout)
			price, _ := strconv.ParseFloat(m[1], 64)
			se, _ := strconv.ParseFloat(m[2], 64)
			bs, _ := strconv.ParseFloat(m[3], 64)
			assert.InDelta(t, serial(atm, paths, 5, job.N), price, 1e-7)
			assert.InDelta(t, atmPrice, bs, 1e-7)
			assert.Less(t, math.Abs(price-atmPrice), 5*se)
		})
	}
}
