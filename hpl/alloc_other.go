//go:build !linux

package hpl

func adviseHuge([]float64) {}

func prefault([]float64) {}
