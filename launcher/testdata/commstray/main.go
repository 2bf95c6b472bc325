// Command commstray is a comm program whose rank FAIL dies right after the bootstrap while every
// other rank waits in Recv for a message from it: gorun, not comm's peer timeout, must end it.
//
//	commstray FAIL CODE   rank FAIL exits CODE (or kills itself with SIGKILL for CODE "kill")
package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"github.com/gorun-hpc/gorun/comm"
)

func main() {
	fail, _ := strconv.Atoi(os.Args[1])
	c, err := comm.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "commstray:", err)
		os.Exit(1)
	}
	if c.Rank() == fail {
		fmt.Printf("rank %d: leaving\n", c.Rank())
		if os.Args[2] == "kill" {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		code, _ := strconv.Atoi(os.Args[2])
		os.Exit(code)
	}
	buf := make([]byte, 8)
	_, err = comm.Recv(c, buf, fail, 0)
	fmt.Printf("rank %d: recv returned %v\n", c.Rank(), err)
	os.Exit(1)
}
