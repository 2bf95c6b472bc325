// Package testfiles locates the project's shared real-data files (small models, tokenizer
// vectors, netlib HPL output). They live outside the repository, in ../shared/testdata next to
// the module root, and are never committed. A test that needs one calls Path: on a public
// clone without the folder the test is skipped, but under CI=true it fails, so that CI never
// passes a reference check it did not run.
package testfiles

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// Root returns the absolute path of the shared testdata folder, or "" when it cannot be found.
// GORUN_TESTDATA overrides the search.
func Root() string {
	if d := os.Getenv("GORUN_TESTDATA"); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			td := filepath.Join(dir, "..", "shared", "testdata")
			if st, err := os.Stat(td); err == nil && st.IsDir() {
				return filepath.Clean(td)
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Required reports whether a missing file must fail the test rather than skip it: when the
// CI variable is true (CI=true, as .ci/run and most CI services set it, or CI=1).
func Required() bool {
	on, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && on
}

// Path returns the path of a file under the shared testdata folder (elements joined). When the
// folder or the file is absent it skips the test with a message, or fails it under CI=true.
func Path(tb testing.TB, elem ...string) string {
	tb.Helper()
	missing := tb.Skipf
	if Required() {
		missing = tb.Fatalf
	}
	root := Root()
	if root == "" {
		missing("shared testdata not found (expected ../shared/testdata beside the module root, or GORUN_TESTDATA)")
		return ""
	}
	p := filepath.Join(append([]string{root}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		missing("shared testdata file %s not present: %v", p, err)
		return ""
	}
	return p
}
