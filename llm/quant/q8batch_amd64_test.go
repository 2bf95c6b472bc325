//go:build amd64 && !noasm

package quant

// set512 turns the sixteen-row groups off (on=false: eight-row groups) or back to what the CPU
// allows, for matrices repacked after the call; it returns a function that restores it.
func set512(on bool) func() {
	old := use512
	use512 = on && old
	return func() { use512 = old }
}
