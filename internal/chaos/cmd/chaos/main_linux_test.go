//go:build linux

package main

import "testing"

// gorun's verdict is told apart from the ranks' own "gorun: rank N: refused ..." logs, in
// each of the launcher's wordings.
func TestBlame(t *testing.T) {
	stderr := "gorun: rank 1: refused connection from 10.99.0.254:4000: bad magic\n" +
		"chaos-worker: rank 0: iteration 3: rank 2: connection closed\n" +
		"gorun: rank 2 (pid 1234) was killed by signal 9 (killed); terminating 3 other ranks\n" +
		"gorun: also failed: rank 0 (pid 1230) exited with code 1\n"
	if err := namedFirst(2)(stderr); err != nil {
		t.Fatal(err)
	}
	if err := namedFirst(1)(stderr); err == nil {
		t.Fatal("rank 1's refusal log taken for the verdict")
	}
	remote := "gorun: rank 3 on 10.99.0.2 exited with code 3; terminating 5 other ranks\n"
	if err := namedFirst(3)(remote); err != nil {
		t.Fatal(err)
	}
	if err := namedFirst(0)("chaos-worker: rank 0: MISMATCH\n"); err == nil {
		t.Fatal("a worker line taken for gorun's verdict")
	}
	if mentions([]int{2, 3}, "10.99.0.2")("lost contact with 10.99.0.2 (ranks 2,3)") != nil ||
		mentions([]int{3}, "")("terminating 3 other ranks") == nil {
		t.Fatal("mentions")
	}
	if k := sshKey("-i /tmp/w/ns/id -o StrictHostKeyChecking=no"); k != "/tmp/w/ns/id" {
		t.Fatalf("sshKey %q", k)
	}
}
