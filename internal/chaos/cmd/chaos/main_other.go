//go:build !linux

// Command chaos is the chaos suite of gorun's job fabric; it needs Linux (network
// namespaces, iptables, /proc).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "chaos: Linux only (network namespaces, iptables, /proc)")
	os.Exit(2)
}
