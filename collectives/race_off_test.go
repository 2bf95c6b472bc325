//go:build !race

package collectives

const raceOn = false
