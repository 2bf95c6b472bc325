//go:build race

package topology

const raceOn = true
