package model

import "fmt"

// Group is the set of ranks that together hold one model (the tensor-parallel group). Every
// rank calls the collective methods in the same order with the same sizes. Package tp
// implements it over comm; Single is the one-rank group.
type Group interface {
	Rank() int
	Size() int
	// AllreduceSum replaces x on every rank with the elementwise sum over the ranks.
	AllreduceSum(x []float32) error
	// Allgatherv concatenates every rank's send (rank r sends counts[r] values) into recv,
	// in rank order, on every rank.
	Allgatherv(send, recv []float32, counts []int) error
}

// Single is the group of one rank.
type Single struct{}

func (Single) Rank() int                      { return 0 }
func (Single) Size() int                      { return 1 }
func (Single) AllreduceSum(x []float32) error { return nil }
func (Single) Allgatherv(send, recv []float32, counts []int) error {
	if len(counts) != 1 || counts[0] != len(send) || len(recv) < len(send) {
		return fmt.Errorf("model: Allgatherv on one rank: %d values, counts %v, room for %d", len(send), counts, len(recv))
	}
	copy(recv, send)
	return nil
}
