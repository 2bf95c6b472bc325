package launcher

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseArgs(t *testing.T) {
	environ := func(k string) (string, bool) {
		if k == "HOME_VAR" {
			return "/home/me", true
		}
		return "", false
	}
	for _, tc := range []struct {
		args []string
		want Command
	}{
		{[]string{"-n", "4", "prog"}, Command{NP: 4, Program: "prog", Args: []string{}, KillGrace: DefaultKillGrace}},
		{[]string{"-np", "3", "prog", "-n", "5", "--tag-output"}, // flags after PROGRAM are PROGRAM's
			Command{NP: 3, Program: "prog", Args: []string{"-n", "5", "--tag-output"}, KillGrace: DefaultKillGrace}},
		{[]string{"-np=2", "--tag-output", "-x", "A=1", "-x", "HOME_VAR", "--export=B=", "--stdin", "none", "prog"},
			Command{NP: 2, Program: "prog", Args: []string{}, TagOutput: true, Export: []string{"A=1", "HOME_VAR=/home/me", "B="}, StdinRank: -1, KillGrace: DefaultKillGrace}},
		{[]string{"--np", "2", "--timeout", "1m", "--peer-timeout", "5s", "--kill-grace", "0s", "--", "-prog-"},
			Command{NP: 2, Program: "-prog-", Args: []string{}, Export: nil, Timeout: time.Minute, PeerTimeout: 5 * time.Second}},
		{[]string{"--np", "8", "--stdin=7", "prog", "a", "b"}, Command{NP: 8, Program: "prog", Args: []string{"a", "b"}, StdinRank: 7, KillGrace: DefaultKillGrace}},
	} {
		var warn strings.Builder
		got, err := ParseArgs(tc.args, environ, &warn)
		require.NoError(t, err, "%q", tc.args)
		assert.Equal(t, tc.want, *got, "%q", tc.args)
		assert.Empty(t, warn.String())
	}
}

func TestParseArgsErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		// -x takes the next word as its value even if it looks like a flag, as pflag does.
		{[]string{"-n", "2", "-x", "-np", "prog"}, `-x "-np": not a valid variable name`},
		{[]string{"-n", "2", "-x", "=v", "prog"}, `-x "=v": not a valid variable name`},
		{[]string{"-n", "2", "--stdin", "-1", "prog"}, `--stdin wants a rank number or "none", got "-1"`},
		{[]string{"-n", "2", "--stdin", "all", "prog"}, `--stdin wants a rank number or "none", got "all"`},
		{[]string{"-n", "2", "--peer-timeout", "soon", "prog"}, `invalid argument "soon"`},
		{[]string{"-n", "2", "--kill-grace", "-1s", "prog"}, "--kill-grace must not be negative"},
	} {
		_, err := ParseArgs(tc.args, func(string) (string, bool) { return "", false }, nil)
		var ue *UsageError
		require.ErrorAs(t, err, &ue, "%q", tc.args)
		assert.Contains(t, err.Error(), tc.msg, "%q", tc.args)
	}
}

func TestParseArgsWarnsOnUnsetExport(t *testing.T) {
	var warn strings.Builder
	got, err := ParseArgs([]string{"-n", "1", "-x", "NOT_SET_ANYWHERE", "prog"}, func(string) (string, bool) { return "", false }, &warn)
	require.NoError(t, err)
	assert.Empty(t, got.Export)
	assert.Equal(t, "gorun: warning: -x NOT_SET_ANYWHERE: not set in gorun's environment, not exported\n", warn.String())
}

func TestParseArgsHelp(t *testing.T) {
	for _, a := range [][]string{{"-h"}, {"--help"}, {"-n", "2", "--help", "prog"}} {
		got, err := ParseArgs(a, nil, nil)
		require.NoError(t, err)
		assert.True(t, got.Help)
	}
	assert.Contains(t, Usage(), "-x, --export VAR[=value]")
}
