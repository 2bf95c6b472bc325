package stage

import "testing"

// CheckOnly is checkOnly for the external tests (pp_test.go).
func CheckOnly(t *testing.T, path string, needs Needs) { checkOnly(t, path, needs) }
