//go:build !linux

package quant

// readOnlyMapping: without /proc/self/maps, copy (always safe).
func readOnlyMapping(b []byte) bool { return true }

// releaseMapped leaves the mapped pages to the system.
func releaseMapped(b []byte) {}
