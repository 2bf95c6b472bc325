package main

import (
	"bytes"
	"strings"
	"testing"
)

// Without a launcher comm.Init gives a world of one rank: enough to exercise the flags and
// output paths of the command.
func TestSingleRank(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"allreduce", "-M", "64", "-i", "3", "-x", "1"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3+5 || !strings.Contains(lines[0], "Allreduce") || !strings.HasPrefix(lines[len(lines)-1], "64 ") {
		t.Fatalf("table:\n%s", out.String())
	}
	out.Reset()
	if code := run([]string{"bcast", "--csv", "-M", "8", "-i", "2"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "test,ranks,size") {
		t.Fatalf("csv: %d %q", code, out.String())
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"allreduce", "--csv", "--json"}, {"allreduce", "-M", "lots"}, {"a", "b"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"latency"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "at least 2 ranks") {
		t.Errorf("latency on one rank: exit %d, %q", code, errb.String())
	}
}
