package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/examples/internal/spmdtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { spmdtest.Main(m, main) }

// input is every rank's keys, concatenated, as the program generates them.
func input(seed uint64, p, n int, keyRange uint64) []uint64 {
	var all []uint64
	for r := 0; r < p; r++ {
		all = append(all, keys(seed, r, n, keyRange)...)
	}
	return all
}

// TestSampleSort: the ranks' ranges, concatenated in rank order, are the input sorted (so
// sorted and a permutation of it), with and without many duplicate keys.
func TestSampleSort(t *testing.T) {
	for _, c := range []struct {
		n        int
		keyRange uint64
	}{{1, 0}, {5, 0}, {1000, 0}, {1000, 3}, {333, 1}} {
		for p := 1; p <= 4; p++ {
			want := input(7, p, c.n, c.keyRange)
			slices.Sort(want)
			parts := make([][]uint64, p)
			err := comm.Run(p, func(cm *comm.Comm) error {
				got, err := sampleSort(cm, keys(7, cm.Rank(), c.n, c.keyRange))
				if err != nil {
					return err
				}
				parts[cm.Rank()] = got
				return verify(cm, got, c.n)
			})
			require.NoError(t, err, "n=%d range=%d p=%d", c.n, c.keyRange, p)
			assert.Equal(t, want, slices.Concat(parts...), "n=%d range=%d p=%d", c.n, c.keyRange, p)
		}
	}
}

// TestVerifyCatchesErrors: the program's own check fails on unsorted, misordered or lost keys.
func TestVerifyCatchesErrors(t *testing.T) {
	err := comm.Run(2, func(c *comm.Comm) error {
		return verify(c, [][]uint64{{5, 6}, {4, 7}}[c.Rank()], 2)
	})
	assert.ErrorContains(t, err, "first key 4 is below the previous rank's last 6")
	err = comm.Run(2, func(c *comm.Comm) error {
		return verify(c, [][]uint64{{1, 2}, {3}}[c.Rank()], 2)
	})
	assert.ErrorContains(t, err, "3 keys after the sort, 4 before")
	err = comm.Run(1, func(c *comm.Comm) error { return verify(c, []uint64{2, 1}, 2) })
	assert.ErrorContains(t, err, "not sorted")
}

func TestProgram(t *testing.T) {
	const n = 5000
	for i, job := range spmdtest.Jobs() {
		keyRange := []uint64{0, 100}[i%2]
		t.Run(fmt.Sprintf("%s/range=%d", job, keyRange), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "sorted.txt")
			stdout := spmdtest.Run(t, job, "--keys", strconv.Itoa(n), "--range", strconv.FormatUint(keyRange, 10), "--seed", "3", "--out", out)
			assert.Regexp(t, regexp.MustCompile(fmt.Sprintf(`^samplesort: %d keys on %d ranks sorted in `, n*job.N, job.N)), stdout)
			b, err := os.ReadFile(out)
			require.NoError(t, err)
			var got []uint64
			for _, l := range strings.Fields(string(b)) {
				k, err := strconv.ParseUint(l, 10, 64)
				require.NoError(t, err)
				got = append(got, k)
			}
			want := input(3, job.N, n, keyRange)
			slices.Sort(want)
			assert.True(t, slices.IsSorted(got), "output not sorted")
			assert.Equal(t, want, got, "output is not a permutation of the input")
		})
	}
}
