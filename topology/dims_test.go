package topology

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// naiveDims enumerates every way to fill the zeros of dims with positive integers whose
// product with the fixed entries is n, and keeps the smallest spread among the filled entries
// (max - min), with the filled entries in non-increasing order.
func naiveDims(n int, dims []int) (best []int, spread int, ok bool) {
	free := 0
	for _, d := range dims {
		if d == 0 {
			free++
		}
	}
	spread = -1
	vals := make([]int, free)
	var rec func(i int)
	rec = func(i int) {
		if i == free {
			out := append([]int(nil), dims...)
			p, k := 1, 0
			for j := range out {
				if out[j] == 0 {
					out[j] = vals[k]
					k++
				}
				p *= out[j]
			}
			if p != n {
				return
			}
			s := 0
			if free > 0 {
				lo, hi := vals[0], vals[0]
				for _, v := range vals {
					lo, hi = min(lo, v), max(hi, v)
				}
				s = hi - lo
			}
			if spread < 0 || s < spread {
				best, spread = out, s
			}
			return
		}
		for v := 1; v <= n; v++ {
			if i > 0 && v > vals[i-1] {
				break
			}
			vals[i] = v
			rec(i + 1)
		}
	}
	rec(0)
	return best, spread, spread >= 0
}

func TestDimsCreateAgainstBruteForce(t *testing.T) {
	notInJob(t)
	shapes := [][]int{{0}, {0, 0}, {0, 0, 0}, {2, 0}, {0, 3}, {0, 2, 0}, {0, 0, 0, 0}, {4, 0, 0}}
	for n := 1; n <= 72; n++ {
		for _, shape := range shapes {
			want, wantSpread, ok := naiveDims(n, shape)
			got, err := DimsCreate(n, shape)
			if !ok {
				assert.Error(t, err, "n=%d dims=%v", n, shape)
				continue
			}
			require.NoError(t, err, "n=%d dims=%v", n, shape)
			p, lo, hi := 1, n, 1
			var filled []int
			for i, d := range got {
				p *= d
				if shape[i] != 0 {
					assert.Equal(t, shape[i], d, "n=%d dims=%v: a given entry changed", n, shape)
				} else {
					filled = append(filled, d)
					lo, hi = min(lo, d), max(hi, d)
				}
			}
			assert.Equal(t, n, p, "n=%d dims=%v got %v", n, shape, got)
			for i := 1; i < len(filled); i++ {
				assert.GreaterOrEqual(t, filled[i-1], filled[i], "n=%d dims=%v got %v: not non-increasing", n, shape, got)
			}
			if len(filled) > 0 {
				assert.Equal(t, wantSpread, hi-lo, "n=%d dims=%v: got %v, brute force %v", n, shape, got, want)
			}
		}
	}
	// Known answers (MPI_Dims_create's).
	for _, c := range []struct {
		n          int
		dims, want []int
	}{
		{6, []int{0, 0}, []int{3, 2}},
		{7, []int{0, 0}, []int{7, 1}},
		{16, []int{0, 0, 0}, []int{4, 2, 2}},
		{6, []int{0, 3, 0}, []int{2, 3, 1}},
		{1 << 20, make([]int, 20), []int{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}},
		{1, nil, []int{}},
	} {
		got, err := DimsCreate(c.n, c.dims)
		require.NoError(t, err)
		assert.Equal(t, append([]int{}, c.want...), append([]int{}, got...), "n=%d dims=%v", c.n, c.dims)
	}
}

func TestDimsCreateErrors(t *testing.T) {
	notInJob(t)
	for _, c := range []struct {
		n    int
		dims []int
		msg  string
	}{
		{0, []int{0}, "0 nodes, want 1 to"},
		{1 << 40, []int{0}, "nodes, want 1 to"},
		{6, []int{-1, 0}, "dims[0] is -1"},
		{6, []int{4, 0}, "does not divide 6"},
		{6, []int{2, 2}, "multiply to 4, not the 6"},
		{6, []int{1 << 62, 1 << 62}, "more than 6"},
		{2, nil, "multiply to 1, not the 2"},
	} {
		dims := append([]int(nil), c.dims...)
		_, err := DimsCreate(c.n, c.dims)
		require.Error(t, err, "n=%d dims=%v", c.n, c.dims)
		assert.Contains(t, err.Error(), c.msg)
		assert.Equal(t, dims, c.dims, "DimsCreate modified its argument")
	}
}
