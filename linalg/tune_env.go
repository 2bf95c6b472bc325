package linalg

import (
	"fmt"
	"os"
)

// GORUN_LINALG_BLOCKS="mc,kc,nc" overrides the cache blocking of the chosen
// kernel, for tuning on a new CPU (mc a multiple of the kernel's mr, nc of
// its nr). Malformed values are reported on stderr and ignored.
func init() {
	s := os.Getenv("GORUN_LINALG_BLOCKS")
	if s == "" {
		return
	}
	var mc, kc, nc int
	if _, err := fmt.Sscanf(s, "%d,%d,%d", &mc, &kc, &nc); err != nil || mc < kern.mr || kc < 1 || nc < kern.nr || mc%kern.mr != 0 || nc%kern.nr != 0 {
		fmt.Fprintf(os.Stderr, "linalg: ignoring GORUN_LINALG_BLOCKS=%q: want mc,kc,nc with mc a positive multiple of %d and nc of %d\n", s, kern.mr, kern.nr)
		return
	}
	kern.mc, kern.kc, kern.nc = mc, kc, nc
}
