// Command commwait is a comm program whose ranks all wait forever for a message nobody sends,
// after saying they are ready: the job only ends when gorun is interrupted.
package main

import (
	"fmt"
	"os"

	"github.com/gorun-hpc/gorun/comm"
)

func main() {
	c, err := comm.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "commwait:", err)
		os.Exit(1)
	}
	fmt.Printf("rank %d: ready\n", c.Rank())
	_, err = comm.Recv(c, make([]byte, 8), (c.Rank()+1)%c.Size(), 0)
	fmt.Printf("rank %d: recv returned %v\n", c.Rank(), err)
	os.Exit(1)
}
