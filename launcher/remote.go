package launcher

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Remote ranks. Each runs under its own ssh session, whose command is a small POSIX sh script
// (remoteScript): it starts the program in the background with the job's environment, turns
// lines read from the session's stdin into signals for it (gorun writes "TERM", "KILL",
// "QUIT", ... there), and when the program ends prints a status line on stderr that gorun
// strips from the output. The status line tells the rank's own exit code from ssh's: ssh
// exits 255 when it cannot connect or loses the connection, and then no status line comes.
// If the session ends (gorun died, the connection dropped), stdin reaches EOF and the script
// terminates the program: SIGTERM, then SIGKILL after the kill grace. When the program has
// ended, the script sends SIGTERM to the rest of its process group, if it leads one (sshd
// makes each session a group of its own): the program's children and the signal reader, which
// would otherwise hold the session open.

// sshDefaults come after the user's ssh arguments (ssh takes the first value given for an
// option, so the user's win): never prompt, and give up on a host that stops answering within
// about ten seconds, so a cut link ends the rank's session in bounded time.
var sshDefaults = []string{"-T", "-x", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
	"-o", "ServerAliveInterval=2", "-o", "ServerAliveCountMax=4"}

// remoteControl is gorun's end of a remote rank's signal channel (the ssh session's stdin).
type remoteControl struct {
	mu     sync.Mutex
	w      io.WriteCloser
	closed bool
}

// send writes one signal name; errors mean the session is gone, which its exit reports.
func (c *remoteControl) send(sig syscall.Signal) {
	name := signalName(sig)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || name == "" {
		return
	}
	if _, err := io.WriteString(c.w, name+"\n"); err != nil {
		c.w.Close()
		c.closed = true
	}
}

func (c *remoteControl) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.w.Close()
		c.closed = true
	}
}

// signalName is the name kill -s takes for the signals gorun passes on.
func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "TERM"
	case syscall.SIGKILL:
		return "KILL"
	case syscall.SIGINT:
		return "INT"
	case syscall.SIGHUP:
		return "HUP"
	case syscall.SIGQUIT:
		return "QUIT"
	case syscall.SIGUSR1:
		return "USR1"
	case syscall.SIGUSR2:
		return "USR2"
	}
	return ""
}

// statusMark starts the line a remote rank's script prints on stderr with the program's exit
// status. It carries the job id, so no program's own output is taken for it by accident.
func statusMark(jobID string) string { return "gorun-rank-status:" + jobID + ":" }

// remoteEnv is the environment a remote rank gets on top of the remote user's: the -x exports,
// gorun's own GORUN_* settings (such as the collectives' tuning variables), and the bootstrap
// contract, which env holds last. Unlike local ranks, the rest of gorun's environment (PATH,
// HOME, ...) belongs to this host and is not sent.
func remoteEnv(env []string, exports []string) []string {
	keep := map[string]bool{}
	for _, x := range exports {
		name, _, _ := strings.Cut(x, "=")
		keep[name] = true
	}
	var out []string
	seen := map[string]int{}
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || !validEnvName(name) || !(keep[name] || strings.HasPrefix(name, "GORUN_")) || name == "GORUN_CACHE_DIR" {
			continue
		}
		if i, dup := seen[name]; dup {
			out[i] = kv // later entries win, as for local ranks
			continue
		}
		seen[name] = len(out)
		out = append(out, kv)
	}
	return out
}

// remoteScript is the sh script that runs one rank on a remote host (see the comment at the top
// of this file).
func remoteScript(dir, program string, args, env []string, mark string, grace time.Duration) string {
	var b strings.Builder
	q := shellQuote
	fmt.Fprintf(&b, "cd %s 2>/dev/null || cd; ", q(dir))
	fmt.Fprintf(&b, "if [ ! -x %s ]; then echo \"gorun: %s: no such executable on $(hostname)\" >&2; printf '%%s%%d\\n' %s 127 >&2; exit 127; fi; ",
		q(program), strings.ReplaceAll(program, `"`, ``), q(mark))
	// fd 3 keeps the session's stdin for the signal reader (an asynchronous list's stdin is
	// /dev/null otherwise), fd 4 the session's stderr: the block's own stderr goes to
	// /dev/null so that the shell's "Terminated" notice never reaches the rank's output.
	b.WriteString("exec 3<&0 4>&2; { env")
	for _, kv := range env {
		b.WriteString(" " + q(kv))
	}
	b.WriteString(" " + q(program))
	for _, a := range args {
		b.WriteString(" " + q(a))
	}
	secs := int((grace + time.Second - 1) / time.Second)
	fmt.Fprintf(&b, " </dev/null 2>&4 3<&- 4>&- & p=$!; "+
		"( while read -r s; do kill -s \"$s\" $p; done; kill -s TERM $p; sleep %d; kill -s KILL $p ) <&3 >/dev/null 2>&1 4>&- & w=$!; "+
		"wait $p; rc=$?; kill $w; } 2>/dev/null; trap '' TERM; kill -s TERM -- -$$ 2>/dev/null; printf '%%s%%d\\n' %s $rc >&4; exit $rc", max(secs, 1), q(mark))
	return b.String()
}

// sshCommand is the command line that starts remoteScript on host.
func sshCommand(ssh []string, host, script string) []string {
	cmd := append([]string{}, ssh...)
	cmd = append(cmd, sshDefaults...)
	// One argument for the remote login shell: sh, bash, zsh and csh all take a single-quoted
	// word literally.
	return append(cmd, host, "exec /bin/sh -c "+shellQuote(script))
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !(c == '/' || c == '.' || c == '_' || c == '-' || c == '=' || c == ':' || c == ',' || c == '+' ||
			'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// SplitShellWords splits a command line as a POSIX shell does, without expansions: words
// separated by blanks, 'single' and "double" quotes, and backslash escapes. It reads the ssh
// arguments of --ssh-args and OMPI_MCA_plm_rsh_args.
func SplitShellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("%q: unterminated single quote", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("%q: unterminated double quote", s)
			}
			inWord = true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, fmt.Errorf("%q: trailing backslash", s)
			}
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// lostHosts lists, for gorun's last words, the remote hosts some of whose ranks ended without
// an exit status: ssh failed or lost the connection, and the ranks may still run there until
// they notice their peers are gone.
func lostHosts(procs []*rankProc) []string {
	byHost := map[string][]string{}
	for _, r := range procs {
		if r.host != "" && r.status() < 0 {
			byHost[r.host] = append(byHost[r.host], strconv.Itoa(r.rank))
		}
	}
	var out []string
	for h, ranks := range byHost {
		out = append(out, fmt.Sprintf("%s (%s %s)", h, plural(len(ranks), "rank", "ranks"), strings.Join(ranks, ",")))
	}
	sort.Strings(out)
	return out
}

// workDir is the directory remote ranks start in: gorun's, if the remote host has it, else the
// remote user's home (as mpirun does).
func workDir(dir string) string {
	if dir != "" {
		if abs, err := filepath.Abs(dir); err == nil {
			return abs
		}
	}
	wd, _ := os.Getwd()
	return wd
}
