//go:build !linux

package sched

import "runtime"

// Yield lets another goroutine run.
func Yield() { runtime.Gosched() }
