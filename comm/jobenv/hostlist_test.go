package jobenv

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExpandHostlist(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{"", nil},
		{"vm", []string{"vm"}},
		{"a,b", []string{"a", "b"}},
		{"node[01-04,07]", []string{"node01", "node02", "node03", "node04", "node07"}},
		{"node[01-04,07],login", []string{"node01", "node02", "node03", "node04", "node07", "login"}},
		{"n[8-11]", []string{"n8", "n9", "n10", "n11"}},
		{"n[098-101]", []string{"n098", "n099", "n100", "n101"}},
		{"gpu[1-2]-ib", []string{"gpu1-ib", "gpu2-ib"}},
		{"r[1-2]n[1-2]", []string{"r1n1", "r1n2", "r2n1", "r2n2"}},
		{"a[3],b[5-5]", []string{"a3", "b5"}},
		{"host-1.example.org", []string{"host-1.example.org"}},
	} {
		got, err := ExpandHostlist(tc.expr)
		require.NoError(t, err, tc.expr)
		assert.Equal(t, tc.want, got, tc.expr)
	}
}

func TestExpandHostlistErrors(t *testing.T) {
	for expr, msg := range map[string]string{
		"node[01-04":       "without ']'",
		"node[]":           "empty brackets",
		"node[4-1]":        `bad range "4-1"`,
		"node[a-b]":        `bad range "a-b"`,
		"node[1-]":         `bad range "1-"`,
		"a,,b":             "empty host name",
		"a]":               "bad host name",
		"n[0-99999999]":    "more than 65536 hosts",
		"a[0-999]b[0-999]": "more than 65536 hosts",
		"n[99999999999]":   "bad range",
	} {
		_, err := ExpandHostlist(expr)
		if assert.Error(t, err, expr) {
			assert.Contains(t, err.Error(), msg, expr)
			assert.Contains(t, err.Error(), expr)
		}
	}
}

// FuzzExpandHostlist checks that any expression either fails cleanly or expands to at most
// MaxHostlist non-empty names, and that a list of plain names expands to itself.
func FuzzExpandHostlist(f *testing.F) {
	for _, s := range []string{"node[01-04,07],login", "r[1-2]n[1-2]", "a,b", "n[0-65535]", "x[", "[1-2]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		names, err := ExpandHostlist(expr)
		if err != nil {
			return
		}
		if len(names) > MaxHostlist {
			t.Fatalf("%q: %d names", expr, len(names))
		}
		for _, n := range names {
			if n == "" || strings.ContainsAny(n, "[],") {
				t.Fatalf("%q expanded to bad name %q", expr, n)
			}
		}
		if !strings.ContainsAny(expr, "[]") && strings.TrimSpace(expr) != "" {
			assert.Equal(t, strings.Split(expr, ","), names)
		}
	})
}

func TestIfaceAddr(t *testing.T) {
	ip, err := IfaceAddr("127.0.0.0/8")
	require.NoError(t, err)
	assert.True(t, ip.IsLoopback())
	_, err = IfaceAddr("no-such-iface0")
	require.ErrorContains(t, err, "this host has: ")
	require.ErrorContains(t, err, "127.0.0.1/8")
	_, err = IfaceAddr("203.0.113.0/24")
	require.Error(t, err)
}
