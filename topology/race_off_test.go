//go:build !race

package topology

const raceOn = false
