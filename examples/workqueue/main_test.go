package main

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/examples/internal/spmdtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { spmdtest.Main(m, main) }

func serial(n int64) int64 {
	s := int64(0)
	for x := int64(1); x <= n; x++ {
		s += steps(x)
	}
	return s
}

func TestSteps(t *testing.T) {
	// 27 takes 111 steps (a classic), 1 none, 6 -> 3 -> 10 -> 5 -> 16 -> 8 -> 4 -> 2 -> 1 eight.
	assert.Equal(t, int64(111), steps(27))
	assert.Equal(t, int64(0), steps(1))
	assert.Equal(t, int64(8), steps(6))
}

// Every chunk is claimed exactly once whatever the interleaving: the total equals the serial
// one and the chunk counts add up.
func TestRunMatchesSerial(t *testing.T) {
	for p := 1; p <= 4; p++ {
		for _, c := range []struct{ n, chunk int64 }{{1000, 7}, {5, 10}, {300, 1}} {
			want := serial(c.n)
			err := comm.Run(p, func(cm *comm.Comm) error {
				total, chunks, err := run(cm, c.n, c.chunk)
				if err != nil || cm.Rank() != 0 {
					return err
				}
				sum := int64(0)
				for _, k := range chunks {
					sum += k
				}
				if total != want || sum != (c.n+c.chunk-1)/c.chunk {
					return fmt.Errorf("n %d chunk %d: total %d (want %d), chunks %v", c.n, c.chunk, total, want, chunks)
				}
				return nil
			})
			require.NoError(t, err, "%d ranks", p)
		}
	}
}

func TestRunErrors(t *testing.T) {
	err := comm.Run(2, func(c *comm.Comm) error {
		_, _, err := run(c, 0, 10)
		return err
	})
	assert.ErrorContains(t, err, "--n 0")
}

func TestProgram(t *testing.T) {
	const n, chunk = 20000, 300
	want := serial(n)
	for _, job := range spmdtest.Jobs() {
		t.Run(job.String(), func(t *testing.T) {
			stdout := spmdtest.Run(t, job, "--n", strconv.Itoa(n), "--chunk", strconv.Itoa(chunk))
			m := regexp.MustCompile(fmt.Sprintf(`^workqueue: numbers 1..%d in chunks of %d on %d ranks in \S+ s: (\d+) Collatz steps in all; chunks per rank \[([\d ]+)\]\n$`, n, chunk, job.N)).FindStringSubmatch(stdout)
			require.NotNil(t, m, stdout)
			got, _ := strconv.ParseInt(m[1], 10, 64)
			assert.Equal(t, want, got)
			sum := 0
			for _, f := range regexp.MustCompile(`\d+`).FindAllString(m[2], -1) {
				k, _ := strconv.Atoi(f)
				sum += k
			}
			assert.Equal(t, (n+chunk-1)/chunk, sum)
		})
	}
}
