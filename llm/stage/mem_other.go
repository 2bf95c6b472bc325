//go:build !linux

package stage

// UsableMemory is unknown here: give llm plan --mem.
func UsableMemory() (int64, bool) { return 0, false }
