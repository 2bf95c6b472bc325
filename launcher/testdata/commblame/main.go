// Command commblame is a comm program in which one rank fails and another fails because of it:
//
//	commblame FAIL WITNESS MODE
//
// Every rank first sends rank FAIL a message, which FAIL receives from all, so every link is
// up. Then FAIL panics (exit code 2); WITNESS, waiting in Recv for a message from FAIL, prints
// the error comm gives it for the lost peer and exits 5; the other ranks wait for gorun's
// SIGTERM. MODE "now": FAIL panics at once. MODE "slow": FAIL first shuts down its sockets and
// panics only 300 ms later, as a dying process's sockets close before its exit completes
// (stretched): WITNESS has then exited before FAIL in every clock's order. MODE "stop": FAIL
// stops itself (SIGSTOP) instead, and WITNESS hears nothing until its peer timeout.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gorun-hpc/gorun/comm"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: commblame FAIL WITNESS now|slow|stop")
		os.Exit(100)
	}
	fail, _ := strconv.Atoi(os.Args[1])
	witness, _ := strconv.Atoi(os.Args[2])
	mode := os.Args[3]
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	c, err := comm.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "commblame:", err)
		os.Exit(1)
	}
	me := c.Rank()
	if me == fail {
		for r := range c.Size() {
			if r != me {
				if _, err := comm.Recv(c, make([]byte, 1), r, 0); err != nil {
					fmt.Fprintln(os.Stderr, "commblame:", err)
					os.Exit(1)
				}
			}
		}
		switch mode {
		case "slow":
			shutdownSockets()
			time.Sleep(300 * time.Millisecond)
		case "stop":
			syscall.Kill(os.Getpid(), syscall.SIGSTOP)
			// The kernel may stop this thread only after the main thread takes the signal:
			// nothing here may get ahead of it. gorun's SIGKILL ends the rank.
			time.Sleep(time.Hour)
		}
		panic(fmt.Sprintf("commblame: rank %d fails", me))
	}
	if err := comm.Send(c, []byte{1}, fail, 0); err != nil {
		fmt.Fprintln(os.Stderr, "commblame:", err)
		os.Exit(1)
	}
	if me == witness {
		_, err := comm.Recv(c, make([]byte, 1), fail, 1)
		fmt.Fprintf(os.Stderr, "commblame: rank %d: recv from rank %d: %v\n", me, fail, err)
		os.Exit(5)
	}
	<-terms
	os.Exit(0)
}

// shutdownSockets shuts down every socket of this process, so its peers read the end of their
// connections as from a process that died.
func shutdownSockets() {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		fmt.Fprintln(os.Stderr, "commblame:", err)
		os.Exit(1)
	}
	for _, e := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil || !strings.HasPrefix(target, "socket:") {
			continue
		}
		if fd, err := strconv.Atoi(e.Name()); err == nil {
			syscall.Shutdown(fd, syscall.SHUT_RDWR)
		}
	}
}
