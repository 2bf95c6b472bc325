//go:build !linux

package hpl

func adviseHuge([]float64) {}
