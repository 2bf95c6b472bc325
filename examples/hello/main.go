// Command hello is the smallest SPMD program: every rank reports who and where it is.
//
//	gorun -n 4 ./examples/hello
package main

import (
	"fmt"
	"os"

	"github.com/gorun-hpc/gorun/comm"
)

func main() {
	// Init reads the rank, the job size and rank 0's address from the environment gorun sets;
	// run without gorun, the program is rank 0 of 1.
	c, err := comm.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
	fmt.Printf("hello from rank %d of %d on %s (pid %d)\n", c.Rank(), c.Size(), c.Host(), os.Getpid())
	// Finalize is collective: no rank leaves while another still needs it.
	if err := c.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
}
