package launcher

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseHostfile(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []Host
	}{
		{"# Open MPI\nnode1 slots=4\nnode2 slots=2 max_slots=8 # comment\n\n", []Host{{"node1", 4, 0}, {"node2", 2, 8}}},
		{"a:2\nb:3\nc\n", []Host{{"a", 2, 0}, {"b", 3, 0}, {"c", 1, 0}}},   // MPICH
		{"a slots=2\nb\na slots=3\n", []Host{{"a", 5, 0}, {"b", 1, 0}}},    // repeats add up
		{"worker-0.job.svc slots=1\n", []Host{{"worker-0.job.svc", 1, 0}}}, // MPI Operator
		{"fe80::1%eth0 slots=2\n10.0.0.1:4\n", []Host{{"fe80::1%eth0", 2, 0}, {"10.0.0.1", 4, 0}}},
		{"\ta\tslots=2\r\n", []Host{{"a", 2, 0}}},
	} {
		got, err := ParseHostfile(strings.NewReader(tc.text), "hf")
		require.NoError(t, err, tc.text)
		assert.Equal(t, tc.want, got, tc.text)
	}
}

func TestParseHostfileErrors(t *testing.T) {
	for text, msg := range map[string]string{
		"":                        "hf: no hosts in the file",
		"# only a comment\n":      "no hosts",
		"a\nb slots=x\n":          `hf:2: host b: slots: "x" is not a slot count`,
		"a slots=0\n":             `hf:1: host a: slots: "0" is not a slot count`,
		"a:0\n":                   `hf:1: host "a:0"`,
		"a:2 slots=3\n":           "slots given twice",
		"a cpus=2\n":              `unknown key "cpus"`,
		"a slots\n":               `"slots" is not key=value`,
		"a slots=4 max_slots=2\n": "slots=4 exceeds max_slots=2",
		"-oProxyCommand=x\n":      "starts with '-'",
		"a;b\n":                   "contains ';'",
		":3\n":                    "empty host name",
	} {
		_, err := ParseHostfile(strings.NewReader(text), "hf")
		if assert.Error(t, err, text) {
			assert.Contains(t, err.Error(), msg, text)
		}
	}
}

func TestParseHostList(t *testing.T) {
	got, err := ParseHostList("host1:2,host2:2")
	require.NoError(t, err)
	assert.Equal(t, []Host{{"host1", 2, 0}, {"host2", 2, 0}}, got)
	got, err = ParseHostList("a,b,a")
	require.NoError(t, err)
	assert.Equal(t, []Host{{"a", 2, 0}, {"b", 1, 0}}, got)
	for _, bad := range []string{"", "a,,b", "a:x", "a slots=2"} {
		_, err := ParseHostList(bad)
		assert.Error(t, err, bad)
	}
}

func hostsOf(p []Placement) []string {
	var s []string
	for _, x := range p {
		s = append(s, x.Host)
	}
	return s
}

func TestMap(t *testing.T) {
	hosts := []Host{{Name: "a", Slots: 2}, {Name: "b", Slots: 3}, {Name: "c", Slots: 1}}
	bySlot, err := Map(hosts, 5, false, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "a", "b", "b", "b"}, hostsOf(bySlot))
	assert.Equal(t, Placement{Rank: 3, LocalRank: 1, LocalSize: 3, Host: "b"}, bySlot[3])
	byNode, err := Map(hosts, 6, true, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c", "a", "b", "b"}, hostsOf(byNode))
	assert.Equal(t, Placement{Rank: 4, LocalRank: 1, LocalSize: 3, Host: "b"}, byNode[4])

	_, err = Map(hosts, 7, false, false)
	assert.ErrorContains(t, err, "7 ranks requested but the hosts have 6 slots (a:2,b:3,c:1)")
	over, err := Map(hosts, 9, false, true)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "a", "a", "b", "b", "b", "b", "c", "c"}, hostsOf(over))
	_, err = Map([]Host{{Name: "a", Slots: 1, MaxSlots: 2}}, 3, false, true)
	assert.ErrorContains(t, err, "max_slots allows 2")
	for r, p := range over {
		assert.Equal(t, r, p.Rank)
	}
}

func TestParseArgsHosts(t *testing.T) {
	env := map[string]string{}
	environ := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	c, err := ParseArgs([]string{"-H", "a:2,b:2", "prog"}, environ, nil)
	require.NoError(t, err)
	assert.Equal(t, 4, c.NP) // the slots, as mpirun
	assert.Equal(t, []Host{{"a", 2, 0}, {"b", 2, 0}}, c.Hosts)

	hf := t.TempDir() + "/hosts"
	writeFile(t, hf, "x slots=3\n", 0o644)
	// mpirun's single-dash long flags, and the MPI Operator's environment.
	env["OMPI_MCA_plm_rsh_args"] = "-p 2222 -o 'ConnectTimeout=5'"
	env["OMPI_MCA_plm_rsh_agent"] = "ssh : rsh"
	c, err = ParseArgs([]string{"-hostfile", hf, "-np", "2", "-map-by", "node", "prog"}, environ, nil)
	require.NoError(t, err)
	assert.Equal(t, 2, c.NP)
	assert.Equal(t, "node", c.MapBy)
	ssh, err := c.sshCommand()
	require.NoError(t, err)
	assert.Equal(t, []string{"ssh", "-p", "2222", "-o", "ConnectTimeout=5"}, ssh)

	env["OMPI_MCA_orte_default_hostfile"] = hf
	c, err = ParseArgs([]string{"prog"}, environ, nil)
	require.NoError(t, err)
	assert.Equal(t, 3, c.NP)
	assert.Equal(t, hf, c.Hostfile)

	// Inside a Slurm allocation without hosts, gorun hands off to srun.
	env = map[string]string{"SLURM_JOB_ID": "7", "SLURM_NTASKS": "4"}
	c, err = ParseArgs([]string{"--tag-output", "prog", "x"}, environ, nil)
	require.NoError(t, err)
	assert.True(t, c.Srun)
	assert.Equal(t, []string{"srun", "-n", "4", "--kill-on-bad-exit=1", "--label", "--input=0", "/bin/prog", "x"}, SrunArgs(c, "/bin/prog"))
	c, err = ParseArgs([]string{"--no-srun", "-n", "2", "prog"}, environ, nil)
	require.NoError(t, err)
	assert.False(t, c.Srun)
	env["SLURM_STEP_ID"] = "0" // already a task of a step: run here
	c, err = ParseArgs([]string{"-n", "2", "prog"}, environ, nil)
	require.NoError(t, err)
	assert.False(t, c.Srun)

	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-H", "a:2", "-n", "3", "prog"}, "3 ranks requested but the hosts have 2 slots"},
		{[]string{"-H", "a", "--hostfile", hf, "prog"}, "exclude each other"},
		{[]string{"--hostfile", "/nonexistent", "prog"}, "/nonexistent"},
		{[]string{"-H", "a", "--map-by", "socket", "prog"}, `--map-by "socket"`},
		{[]string{"-H", "a", "--ssh-args", "'unterminated", "prog"}, "unterminated single quote"},
		{[]string{"-n", "2", "--transport", "carrier-pigeon", "prog"}, `--transport "carrier-pigeon": want tcp, shm, verbs or auto`},
	} {
		_, err := ParseArgs(tc.args, func(string) (string, bool) { return "", false }, nil)
		var ue *UsageError
		if assert.ErrorAs(t, err, &ue, "%q", tc.args) {
			assert.Contains(t, err.Error(), tc.msg, "%q", tc.args)
		}
	}
}

// FuzzParseHostfile: any input parses into valid hosts or fails with a message naming the
// file; never a panic.
func FuzzParseHostfile(f *testing.F) {
	for _, s := range []string{"a slots=2\nb:3\n# c\n", "x max_slots=4 slots=2", "a:b:c\n", "h slots=99999999999\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		hosts, err := ParseHostfile(strings.NewReader(text), "fz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fz") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		for _, h := range hosts {
			if checkHostName(h.Name) != nil || h.Slots < 1 || h.Slots > maxSlots || (h.MaxSlots > 0 && h.MaxSlots < h.Slots) {
				t.Fatalf("bad host %+v from %q", h, text)
			}
		}
		if _, err := Map(hosts, TotalSlots(hosts), false, false); err != nil {
			t.Fatalf("hosts %v do not map their own slots: %v", hosts, err)
		}
	})
}
