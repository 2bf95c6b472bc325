package testfiles

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB whose Skipf and Fatalf record the call instead of ending the test.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

func TestPath(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "present.bin"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GORUN_TESTDATA", dir)
	for _, tc := range []struct {
		ci, name            string
		wantSkip, wantFatal bool
	}{
		{"", "present.bin", false, false},
		{"true", "present.bin", false, false},
		{"", "absent.bin", true, false},
		{"false", "absent.bin", true, false},
		{"true", "absent.bin", false, true},
		{"1", "absent.bin", false, true},
	} {
		t.Run("CI="+tc.ci+"/"+tc.name, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			r := &recorder{TB: t}
			p := Path(r, tc.name)
			if (r.skipped != "") != tc.wantSkip || (r.failed != "") != tc.wantFatal {
				t.Fatalf("skipped %q, failed %q; want skip %v, fail %v", r.skipped, r.failed, tc.wantSkip, tc.wantFatal)
			}
			if !tc.wantSkip && !tc.wantFatal && p != filepath.Join(dir, tc.name) {
				t.Fatalf("Path = %q, want %q", p, filepath.Join(dir, tc.name))
			}
			if msg := r.skipped + r.failed; msg != "" && !strings.Contains(msg, tc.name) {
				t.Fatalf("message %q does not name the file %s", msg, tc.name)
			}
		})
	}
}

// A missing folder (no GORUN_TESTDATA, no ../shared/testdata) fails under CI=true.
func TestRootMissing(t *testing.T) {
	t.Setenv("GORUN_TESTDATA", "")
	t.Chdir(t.TempDir())
	if r := Root(); r != "" {
		t.Fatalf("Root() = %q outside any module, want \"\"", r)
	}
	t.Setenv("CI", "true")
	r := &recorder{TB: t}
	Path(r, "llm", "x.gguf")
	if !strings.Contains(r.failed, "shared testdata not found") || r.skipped != "" {
		t.Fatalf("skipped %q, failed %q; want a failure naming the missing folder", r.skipped, r.failed)
	}
}
