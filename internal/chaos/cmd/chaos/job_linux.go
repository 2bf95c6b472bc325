//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// rankInfo is what a worker rank says of itself in its first line.
type rankInfo struct {
	pid  int
	host string
	job  string
}

// job is one gorun run of the worker, its output collected line by line.
type job struct {
	cmd     *exec.Cmd
	mu      sync.Mutex
	stdout  bytes.Buffer
	stderr  bytes.Buffer
	ranks   map[int]rankInfo
	jobID   string
	ready   chan struct{}
	readyOK bool
	done    chan struct{}
	exit    int // gorun's exit code, -1 if killed by the driver
	ended   time.Time
	started time.Time
	size    int
	iter    int // rank 0's last finished iteration
}

var (
	rankLine  = regexp.MustCompile(`^chaos-worker: rank (\d+) pid (\d+) host (\S+) job (\S+)$`)
	readyLine = regexp.MustCompile(`^chaos-worker: job (\S+), (\d+) ranks: ready$`)
	iterLine  = regexp.MustCompile(`^chaos-worker: iteration (\d+) done$`)
)

// startJob starts gorun with args; size is the rank count it starts.
func startJob(gorun string, args []string, size int) (*job, error) {
	j := &job{ranks: map[int]rankInfo{}, ready: make(chan struct{}), done: make(chan struct{}), size: size}
	j.cmd = exec.Command(gorun, args...)
	j.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	outR, err := j.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	errR, err := j.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	j.started = time.Now()
	if err := j.cmd.Start(); err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); j.scan(outR, &j.stdout, true) }()
	go func() { defer wg.Done(); j.scan(errR, &j.stderr, false) }()
	go func() {
		wg.Wait()
		err := j.cmd.Wait()
		j.mu.Lock()
		j.ended = time.Now()
		j.exit = 0
		if ee, ok := err.(*exec.ExitError); ok {
			j.exit = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				j.exit = 128 + int(ws.Signal())
			}
		} else if err != nil {
			j.exit = -1
		}
		j.mu.Unlock()
		close(j.done)
	}()
	return j, nil
}

func (j *job) scan(r io.Reader, into *bytes.Buffer, out bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		j.mu.Lock()
		into.WriteString(line + "\n")
		if out {
			if m := rankLine.FindStringSubmatch(line); m != nil {
				r, _ := strconv.Atoi(m[1])
				pid, _ := strconv.Atoi(m[2])
				j.ranks[r] = rankInfo{pid: pid, host: m[3], job: m[4]}
				j.jobID = m[4]
			}
			if m := iterLine.FindStringSubmatch(line); m != nil {
				j.iter, _ = strconv.Atoi(m[1])
			}
			if m := readyLine.FindStringSubmatch(line); m != nil && !j.readyOK {
				j.readyOK = true
				close(j.ready)
			}
		}
		j.mu.Unlock()
	}
	io.Copy(io.Discard, r)
}

// releaseReady closes the ready channel if the worker's line did not (the job failed first),
// for whoever waits on it.
func (j *job) releaseReady() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.readyOK {
		j.readyOK = true
		close(j.ready)
	}
}

// waitReady waits until rank 0 says the job is ready and every rank has named its pid.
func (j *job) waitReady(d time.Duration) error {
	deadline := time.After(d)
	select {
	case <-j.ready:
	case <-j.done:
		return fmt.Errorf("the job ended before it was ready (exit %d): %s", j.exit, lastLines(j.errText(), 3))
	case <-deadline:
		return fmt.Errorf("not ready after %v", d)
	}
	for {
		j.mu.Lock()
		n := len(j.ranks)
		j.mu.Unlock()
		if n == j.size {
			return nil
		}
		select {
		case <-deadline:
			return fmt.Errorf("only %d of %d ranks named their pids after %v", n, j.size, d)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// iteration is rank 0's last finished iteration.
func (j *job) iteration() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.iter
}

// wait waits for gorun to exit, at most d; false if it did not.
func (j *job) wait(d time.Duration) bool {
	select {
	case <-j.done:
		return true
	case <-time.After(d):
		return false
	}
}

// kill ends gorun's process group (the driver's own child) and waits for it.
func (j *job) kill() {
	syscall.Kill(-j.cmd.Process.Pid, syscall.SIGKILL)
	<-j.done
}

func (j *job) rank(r int) rankInfo {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.ranks[r]
}

func (j *job) outText() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stdout.String()
}

func (j *job) errText() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stderr.String()
}

func (j *job) pids() []int {
	j.mu.Lock()
	defer j.mu.Unlock()
	var p []int
	for _, r := range j.ranks {
		p = append(p, r.pid)
	}
	return p
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// alive reports whether pid still runs the program at path (a pid may be reused).
func alive(pid int, path string) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && strings.TrimSuffix(exe, " (deleted)") == path
}

// procsOf lists the processes running the program at path.
func procsOf(path string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && alive(pid, path) {
			out = append(out, pid)
		}
	}
	return out
}
