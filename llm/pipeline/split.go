package pipeline

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSplit reads a layer split given by hand ("20,20,12,12": layers per stage, in order);
// Load checks it against the model (CheckSplit).
func ParseSplit(spec string) ([]int, error) {
	var split []int
	for _, s := range strings.Split(spec, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < 1 || v > 1<<20 {
			return nil, fmt.Errorf("--layer-split %q: %q is not a positive layer count", spec, s)
		}
		split = append(split, v)
	}
	return split, nil
}

// CheckSplit checks a split (layers per stage) against the model's layers and the stages.
func CheckSplit(split []int, layers, stages int) error {
	total := 0
	for _, v := range split {
		if v < 1 {
			return fmt.Errorf("layer split %v: stage of %d layers", split, v)
		}
		total += v
	}
	if len(split) != stages || total != layers {
		return fmt.Errorf("layer split %v: %d stages of %d layers in all, want %d stages of the model's %d layers", split, len(split), total, stages, layers)
	}
	return nil
}

// SplitByMemory divides layers over the stages in proportion to their usable memory (mem, one
// per stage, bytes): each stage gets the floor of its exact share (at least one layer), the
// largest remainders the layers left. When a stage's memory is unknown (<= 0) the split is
// even; even reports that.
func SplitByMemory(layers int, mem []int64) (split []int, even bool, err error) {
	stages := len(mem)
	if stages < 1 {
		return nil, false, fmt.Errorf("no pipeline stages")
	}
	if stages > layers {
		return nil, false, fmt.Errorf("%d pipeline stages for %d layers: want at most one stage per layer", stages, layers)
	}
	weight := make([]float64, stages)
	var sum float64
	for s, m := range mem {
		if m <= 0 {
			even = true
		}
		weight[s] = float64(m)
		sum += weight[s]
	}
	if even {
		for s := range weight {
			weight[s] = 1
		}
		sum = float64(stages)
	}
	split = make([]int, stages)
	rem := make([]float64, stages)
	given := 0
	for s := range split {
		exact := float64(layers) * weight[s] / sum
		split[s] = max(1, int(exact))
		rem[s] = exact - float64(int(exact))
		given += split[s]
	}
	for given < layers { // the largest remainders (the first among equals) get the layers left
		best := 0
		for s := range rem {
			if rem[s] > rem[best] {
				best = s
			}
		}
		split[best]++
		rem[best] = -1
		given++
	}
	for given > layers { // minimums of one layer overshot: take from the largest
		big := 0
		for s := range split {
			if split[s] > split[big] {
				big = s
			}
		}
		split[big]--
		given--
	}
	return split, even, nil
}

// Ranges turns a split (layers per stage) into each stage's layers [first, end).
func Ranges(split []int) [][2]int {
	out := make([][2]int, len(split))
	l := 0
	for s, n := range split {
		out[s] = [2]int{l, l + n}
		l += n
	}
	return out
}
