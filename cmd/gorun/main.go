// Command gorun starts an SPMD program as N ranks, as mpirun does: on this host, on the hosts
// of a hostfile over ssh, or as a Slurm job step inside an allocation:
//
//	gorun -n 4 ./examples/ring
//	go run ./cmd/gorun -n 4 hpl
//	gorun --hostfile hosts ./hpl
//	gorun -H node1:2,node2:2 --iface 10.0.0.0/24 ./examples/ring
//	gorun doctor --hostfile hosts
//
// Run gorun --help for the flags; package launcher holds the logic, package doctor the
// cluster check (gorun doctor --help).
package main

import (
	"os"

	"github.com/gorun-hpc/gorun/doctor"
	"github.com/gorun-hpc/gorun/launcher"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "doctor" {
		os.Exit(doctor.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(launcher.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
