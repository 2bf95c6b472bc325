package rma

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// segment is a shared file mapping that the ranks of one host map at window creation.
type segment struct {
	path string
	mem  []byte
}

// segmentPath names a new segment with the job's segment prefix, so that gorun removes it if
// the job dies before it is unlinked.
func segmentPath() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	job := os.Getenv(jobenv.JobID)
	if job == "" {
		job = fmt.Sprintf("run%d", os.Getpid())
	}
	return filepath.Join(jobenv.SegmentDir(), jobenv.SegmentPrefix(job)+"rma-"+hex.EncodeToString(b[:])), nil
}

func createSegment(size int) (*segment, error) {
	path, err := segmentPath()
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := f.Truncate(int64(size)); err != nil {
		os.Remove(path)
		return nil, err
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	return &segment{path: path, mem: mem}, nil
}

func openSegment(path string, size int) (*segment, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() != int64(size) {
		return nil, fmt.Errorf("segment %s has %d bytes, want %d", path, fi.Size(), size)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	return &segment{path: path, mem: mem}, nil
}

func (s *segment) unlink() { os.Remove(s.path) }

func (s *segment) close() {
	if s.mem != nil {
		syscall.Munmap(s.mem)
		s.mem = nil
	}
}
