package topology

import (
	"fmt"
	"sort"
)

// maxNodes bounds DimsCreate's node count as MPI's int does; it keeps the factor search short.
const maxNodes = 1<<31 - 1

// DimsCreate chooses the dimensions of a Cartesian grid of nnodes ranks, as MPI_Dims_create:
// entries of dims that are positive are kept, zeros are filled so that the product is nnodes
// and the filled entries are as close to each other as possible (the largest minus the
// smallest is minimal), in non-increasing order. dims is not modified. It is an error for
// nnodes to be below 1, for an entry to be negative, or for the kept entries not to divide
// nnodes (or, with no zero, not to multiply to it).
func DimsCreate(nnodes int, dims []int) ([]int, error) {
	if nnodes < 1 || nnodes > maxNodes {
		return nil, fmt.Errorf("topology: DimsCreate: %d nodes, want 1 to %d", nnodes, maxNodes)
	}
	fixed, free := 1, 0
	for i, d := range dims {
		switch {
		case d < 0:
			return nil, fmt.Errorf("topology: DimsCreate: dims[%d] is %d, want >= 0 (0: choose)", i, d)
		case d == 0:
			free++
		default:
			if d > nnodes || fixed > nnodes/d { // fixed*d > nnodes, checked without overflow
				return nil, fmt.Errorf("topology: DimsCreate: dims %v multiply to more than %d ranks", dims, nnodes)
			}
			fixed *= d
		}
	}
	if nnodes%fixed != 0 || (free == 0 && fixed != nnodes) {
		if free == 0 {
			return nil, fmt.Errorf("topology: DimsCreate: dims %v multiply to %d, not the %d ranks", dims, fixed, nnodes)
		}
		return nil, fmt.Errorf("topology: DimsCreate: the given dims of %v multiply to %d, which does not divide %d ranks", dims, fixed, nnodes)
	}
	out := append([]int(nil), dims...)
	if free == 0 {
		return out, nil
	}
	fill := balanced(nnodes/fixed, free)
	for i, k := 0, 0; i < len(out); i++ {
		if out[i] == 0 {
			out[i] = fill[k]
			k++
		}
	}
	return out, nil
}

// balanced returns k factors of m in non-increasing order whose spread (largest - smallest)
// is minimal: an exhaustive search over non-increasing divisor sequences, pruned by the best
// spread found so far.
func balanced(m, k int) []int {
	var divs []int
	for d := 1; d*d <= m; d++ {
		if m%d == 0 {
			divs = append(divs, d)
			if d*d != m {
				divs = append(divs, m/d)
			}
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(divs)))
	best, bestSpread := []int(nil), m+1
	cur := make([]int, 0, k)
	var rec func(rem, slots, max int)
	rec = func(rem, slots, max int) {
		if slots == 1 {
			if rem > max {
				return
			}
			first := rem
			if len(cur) > 0 {
				first = cur[0]
			}
			if s := first - rem; s < bestSpread {
				bestSpread = s
				best = append(append(best[:0], cur...), rem)
			}
			return
		}
		for _, d := range divs {
			if d > max || rem%d != 0 {
				continue
			}
			if len(cur) > 0 && cur[0]-d >= bestSpread {
				break // every later factor is at most d: the spread cannot improve
			}
			if !powAtLeast(d, slots, rem) {
				break // d and the smaller factors after it cannot reach rem
			}
			cur = append(cur, d)
			rec(rem/d, slots-1, d)
			cur = cur[:len(cur)-1]
		}
	}
	rec(m, k, m)
	return best
}

// powAtLeast reports whether d^n >= m, without overflow.
func powAtLeast(d, n, m int) bool {
	p := 1
	for i := 0; i < n; i++ {
		if p >= m {
			return true
		}
		p *= d
	}
	return p >= m
}
