// Package topology gives a communicator a shape, as MPI's process topologies do: a Cartesian
// grid (NewCart: coordinates, Shift, Sub for row and column communicators) or a directed graph
// of neighbours (NewDistGraph), and the neighbour collectives over that shape
// (NeighborAllgather, NeighborAlltoall, NeighborAlltoallv and their non-blocking forms), which
// exchange with every neighbour in one call: a halo exchange is one NeighborAlltoall.
//
//	cart, err := topology.NewCart(c, []int{0, 0}, []bool{false, false}, true) // a balanced 2-D grid
//	up, down, err := cart.Shift(0, 1)                                        // ProcNull at an edge
//	rows, err := cart.Sub([]bool{false, true})                               // this rank's row
//	err = topology.NeighborAlltoall(cart, sendHalo, recvHalo)
//
// # Communicators and message spaces
//
// A topology owns two communicators over the same group: Comm, for the program's own
// point-to-point messages and collectives in the topology's rank order, and a private
// duplicate (made with Comm.Dup at creation) that carries only the neighbour collectives,
// so their messages never match the program's, whatever tags or AnySource receives it uses.
//
// # Neighbour order
//
// A Cartesian topology of n dimensions has 2n neighbour slots, in MPI's order: for each
// dimension d, slot 2d is the neighbour at displacement -1 and slot 2d+1 the one at +1
// (Shift(d, 1)). Send block 2d goes to the -1 neighbour; receive block 2d comes from it (it is
// the block that neighbour sent towards +1). A slot without a neighbour (the edge of a
// non-periodic dimension) holds ProcNull: nothing is sent there and its receive block is left
// as it was. A periodic dimension of size 1 or 2 makes a rank its own neighbour, or the same
// rank both neighbours; blocks still land in the right slots. A graph topology's slots are its
// sources and destinations in the order given; a repeated edge matches in that order.
//
// # Bad input
//
// The constructors are collective and check before they communicate: dims that do not
// multiply to the communicator's size, a periods slice of another length, ranks out of range,
// edges one side does not list, or arguments that differ between ranks make every rank return
// an error (wrapping collectives.ErrMismatch on the ranks whose own arguments were valid),
// never a hang. The neighbour collectives involve only neighbours, so they are checked among
// neighbours: every message carries its element size, count and the call's sequence number; a
// rank whose buffers do not fit its neighbourhood still sends a refusal to each neighbour, and
// a rank that receives a refusal, a block of another size or type, or a message of another
// call returns an error. In a Cartesian topology, whose neighbour relation is symmetric, every
// rank next to a disagreeing rank therefore fails with it; ranks further away complete.
package topology
