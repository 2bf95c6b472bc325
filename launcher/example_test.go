package launcher_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gorun-hpc/gorun/launcher"
)

func ExampleParseArgs() {
	cmd, err := launcher.ParseArgs([]string{"-np", "4", "--tag-output", "-x", "OMP_NUM_THREADS=1", "./examples/ring", "--laps", "3"}, os.LookupEnv, os.Stderr)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cmd.NP, cmd.TagOutput, cmd.Export, cmd.Program, cmd.Args)
	// Output: 4 true [OMP_NUM_THREADS=1] ./examples/ring [--laps 3]
}

func ExampleJob_Run() {
	sh, err := launcher.Resolver{}.Resolve("sh")
	if err != nil {
		fmt.Println(err)
		return
	}
	job := &launcher.Job{
		NP:        3,
		Program:   sh,
		Args:      []string{"-c", `echo "rank $GORUN_RANK of $GORUN_SIZE"`},
		TagOutput: true,
		Stdout:    os.Stdout,
		Stderr:    os.Stderr,
	}
	code, err := job.Run(context.Background())
	fmt.Println("exit code", code, err)
	// Unordered output:
	// [0] rank 0 of 3
	// [1] rank 1 of 3
	// [2] rank 2 of 3
	// exit code 0 <nil>
}

func ExampleResolver_Resolve() {
	// A bare name is looked up on PATH first; a path to a Go main package is built.
	p, err := launcher.Resolver{}.Resolve("sh")
	fmt.Println(filepath.Base(p), err)
	// Output: sh <nil>
}
