// Command gorun starts an SPMD program as N ranks on this host, as mpirun does:
//
//	gorun -n 4 ./examples/ring
//	go run ./cmd/gorun -n 4 hpl
//
// Run gorun --help for the flags; package launcher holds the logic.
package main

import (
	"os"

	"github.com/gorun-hpc/gorun/launcher"
)

func main() {
	os.Exit(launcher.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
