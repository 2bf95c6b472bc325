package topology_test

import (
	"fmt"

	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/topology"
)

// DimsCreate picks a balanced grid for a rank count, keeping the dimensions you fix.
func ExampleDimsCreate() {
	a, _ := topology.DimsCreate(12, []int{0, 0})
	b, _ := topology.DimsCreate(12, []int{0, 3, 0})
	_, err := topology.DimsCreate(12, []int{5, 0})
	fmt.Println(a, b)
	fmt.Println(err)
	// Output:
	// [4 3] [2 3 2]
	// topology: DimsCreate: the given dims of [5 0] multiply to 5, which does not divide 12 ranks
}

// NewCart arranges the ranks in a grid; Shift names the neighbours along a dimension.
func ExampleNewCart() {
	comm.Run(6, func(c *comm.Comm) error {
		// 2 x 3, periodic along the second dimension (each row is a ring).
		cart, err := topology.NewCart(c, []int{2, 3}, []bool{false, true}, false)
		if err != nil {
			return err
		}
		if cart.Rank() == 2 {
			up, down, _ := cart.Shift(0, 1)
			left, right, _ := cart.Shift(1, 1)
			fmt.Println("rank 2 at", cart.Coords(), "up", up == topology.ProcNull, "down", down, "left", left, "right", right)
		}
		return nil
	})
	// Output: rank 2 at [0 2] up true down 5 left 1 right 0
}

// Sub gives each rank the communicator of its grid row or column, as SUMMA and other
// 2-D algorithms broadcast along them.
func ExampleCart_Sub() {
	comm.Run(6, func(c *comm.Comm) error {
		cart, err := topology.NewCart(c, []int{2, 3}, nil, false)
		if err != nil {
			return err
		}
		row, err := cart.Sub([]bool{false, true})
		if err != nil {
			return err
		}
		col, err := cart.Sub([]bool{true, false})
		if err != nil {
			return err
		}
		if cart.Rank() == 4 {
			fmt.Printf("rank 4: rank %d of its row (%d ranks), rank %d of its column (%d ranks)\n", row.Rank(), row.Size(), col.Rank(), col.Size())
		}
		return nil
	})
	// Output: rank 4: rank 1 of its row (3 ranks), rank 1 of its column (2 ranks)
}

// NeighborAlltoall is a halo exchange in one call: block 2d goes to the -1 neighbour along
// dimension d and block 2d+1 to the +1 neighbour; the receive blocks come from them.
func ExampleNeighborAlltoall() {
	comm.Run(4, func(c *comm.Comm) error {
		ring, err := topology.NewCart(c, []int{4}, []bool{true}, false)
		if err != nil {
			return err
		}
		me := float64(ring.Rank())
		send := []float64{me * 10, me*10 + 1} // to the left, to the right
		recv := make([]float64, 2)            // from the left, from the right
		if err := topology.NeighborAlltoall(ring, send, recv); err != nil {
			return err
		}
		if ring.Rank() == 0 {
			fmt.Println("rank 0 got", recv[0], "from its left and", recv[1], "from its right")
		}
		return nil
	})
	// Output: rank 0 got 31 from its left and 10 from its right
}

// A graph topology: each rank names whom it receives from and sends to; NeighborAllgather
// collects one block from every source.
func ExampleNeighborAllgather() {
	comm.Run(4, func(c *comm.Comm) error {
		// A star: rank 0 hears from every other rank, which each hear from rank 0.
		var srcs, dsts []int
		if c.Rank() == 0 {
			srcs, dsts = []int{1, 2, 3}, []int{1, 2, 3}
		} else {
			srcs, dsts = []int{0}, []int{0}
		}
		g, err := topology.NewDistGraph(c, srcs, dsts)
		if err != nil {
			return err
		}
		recv := make([]int64, len(srcs))
		if err := topology.NeighborAllgather(g, []int64{int64(100 + c.Rank())}, recv); err != nil {
			return err
		}
		if c.Rank() == 0 {
			fmt.Println("hub got", recv)
		}
		return nil
	})
	// Output: hub got [101 102 103]
}
