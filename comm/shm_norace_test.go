//go:build !race

package comm

// raceEnabled: the race detector allocates on its own account (allocation counts are off).
const raceEnabled = false
