// Command hello is a test program for the launcher: it prints its rank from the bootstrap
// environment that gorun writes.
package main

import (
	"fmt"
	"os"

	"github.com/gorun-hpc/gorun/comm/jobenv"
)

func main() {
	fmt.Printf("hello from rank %s of %s\n", os.Getenv(jobenv.Rank), os.Getenv(jobenv.Size))
}
