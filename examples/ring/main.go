// Command ring passes a token around the ranks: rank 0 starts it, each rank adds its own rank
// and forwards it, and after --laps laps rank 0 checks the total.
//
//	gorun -n 4 ./examples/ring --laps 3
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gorun-hpc/gorun/comm"
)

const tokenTag = 1

func main() {
	laps := flag.Int("laps", 1, "times the token goes around")
	flag.Parse()
	c, err := comm.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ring:", err)
		os.Exit(1)
	}
	if err := ring(c, *laps); err != nil {
		fmt.Fprintf(os.Stderr, "ring: rank %d: %v\n", c.Rank(), err)
		os.Exit(1)
	}
	if err := c.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "ring:", err)
		os.Exit(1)
	}
}

func ring(c *comm.Comm, laps int) error {
	rank, size := c.Rank(), c.Size()
	next, prev := (rank+1)%size, (rank+size-1)%size
	token := []int64{0}
	for lap := 0; lap < laps; lap++ {
		if rank == 0 {
			// Rank 0 sends first and receives last, so the token makes a full circle.
			token[0]++
			if err := comm.Send(c, token, next, tokenTag); err != nil {
				return err
			}
			if _, err := comm.Recv(c, token, prev, tokenTag); err != nil {
				return err
			}
			fmt.Printf("lap %d: token back at rank 0 with value %d\n", lap+1, token[0])
			continue
		}
		if _, err := comm.Recv(c, token, prev, tokenTag); err != nil {
			return err
		}
		token[0] += int64(rank)
		if err := comm.Send(c, token, next, tokenTag); err != nil {
			return err
		}
	}
	if rank == 0 {
		// Each lap adds 1 at rank 0 and 1+2+...+(size-1) on the way round.
		want := int64(laps) * (1 + int64(size)*int64(size-1)/2)
		if token[0] != want {
			return fmt.Errorf("token is %d after %d laps, want %d", token[0], laps, want)
		}
		fmt.Printf("ring of %d ranks: %d laps, token %d: correct\n", size, laps, token[0])
	}
	return nil
}
