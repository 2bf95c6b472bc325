//go:build linux

package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// proxyMark marks the proxy's own connections, which the REDIRECT rule lets through.
const proxyMark = 0x6368

// The proxy sits in one host's network namespace, where an iptables REDIRECT rule sends the
// host's outgoing TCP connections to another host to it; it reads each connection's original
// destination (SO_ORIGINAL_DST), connects there itself and copies both ways. It records the
// first bytes each client sent (for the replay scenario) and, when asked, damages the
// client-to-server stream once, after a given number of bytes: a byte flipped, or a burst of
// random bytes written over the stream (corruption that TCP's checksum did not catch).
func proxyMain(args []string) error {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	listen := fs.String("listen", ":7070", "address to accept redirected connections on")
	capture := fs.String("capture", "", "directory to write each connection's first client bytes and destination to")
	after := fs.Int64("corrupt-after", -1, "damage the client-to-server bytes once this many have passed (all connections together); <0: never")
	mode := fs.String("corrupt", "flip", "flip (one byte) or burst (4 KiB of random bytes)")
	seed := fs.Uint64("seed", 1, "seed of the damage")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	fmt.Println("proxy: listening")
	p := &proxy{capture: *capture, after: *after, mode: *mode, rng: rand.New(rand.NewPCG(*seed, 7))}
	for n := 0; ; n++ {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go p.serve(c.(*net.TCPConn), n)
	}
}

type proxy struct {
	capture string
	after   int64
	mode    string
	mu      sync.Mutex
	rng     *rand.Rand
	passed  atomic.Int64 // client-to-server bytes so far
	done    atomic.Bool  // the damage was done
}

// originalDst reads the destination the REDIRECT rule replaced.
func originalDst(c *net.TCPConn) (*net.TCPAddr, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var addr *net.TCPAddr
	var serr error
	err = raw.Control(func(fd uintptr) {
		// A sockaddr_in comes back in the 16 bytes of an IPv6Mreq.
		m, err := unix.GetsockoptIPv6Mreq(int(fd), unix.SOL_IP, unix.SO_ORIGINAL_DST)
		if err != nil {
			serr = err
			return
		}
		b := m.Multiaddr
		addr = &net.TCPAddr{IP: net.IPv4(b[4], b[5], b[6], b[7]), Port: int(binary.BigEndian.Uint16(b[2:4]))}
	})
	if err == nil {
		err = serr
	}
	return addr, err
}

func (p *proxy) serve(c *net.TCPConn, n int) {
	defer c.Close()
	dst, err := originalDst(c)
	if err != nil {
		fmt.Fprintf(os.Stderr, "proxy: connection %d: original destination: %v\n", n, err)
		return
	}
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MARK, proxyMark) })
		if err != nil {
			return err
		}
		return serr
	}}
	s, err := d.Dial("tcp", dst.String())
	if err != nil {
		fmt.Fprintf(os.Stderr, "proxy: connection %d to %v: %v\n", n, dst, err)
		return
	}
	defer s.Close()
	var first []byte
	if p.capture != "" {
		first = make([]byte, 0, 512)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		io.Copy(c, s)
		c.Close()
	}()
	buf := make([]byte, 64<<10)
	for {
		k, err := c.Read(buf)
		if k > 0 {
			chunk := buf[:k]
			if first != nil {
				// Saved as it grows: the hello is wanted while the bootstrap still runs.
				first = append(first, chunk[:min(k, cap(first)-len(first))]...)
				p.save(n, dst, c.RemoteAddr(), first)
				if len(first) == cap(first) {
					first = nil
				}
			}
			p.damage(chunk, dst)
			if _, err := s.Write(chunk); err != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	s.Close()
	wg.Wait()
}

// damage changes chunk once, when the client-to-server total crosses p.after.
func (p *proxy) damage(chunk []byte, dst *net.TCPAddr) {
	end := p.passed.Add(int64(len(chunk)))
	if p.after < 0 || p.done.Load() || end <= p.after {
		return
	}
	if !p.done.CompareAndSwap(false, true) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	at := int(p.after - (end - int64(len(chunk))))
	at = max(0, min(at, len(chunk)-1))
	switch p.mode {
	case "burst":
		n := min(4096, len(chunk)-at)
		for i := at; i < at+n; i++ {
			chunk[i] = byte(p.rng.Uint32())
		}
		fmt.Fprintf(os.Stderr, "proxy: wrote %d random bytes over the stream to %v at byte %d\n", n, dst, p.after)
	default:
		chunk[at] ^= byte(1 + p.rng.IntN(255))
		fmt.Fprintf(os.Stderr, "proxy: flipped the byte at %d of the stream to %v\n", p.after, dst)
	}
}

// save writes a connection's first client bytes as capture/conn-N (its first line the
// destination).
func (p *proxy) save(n int, dst *net.TCPAddr, from net.Addr, b []byte) {
	name := filepath.Join(p.capture, "conn-"+strconv.Itoa(n))
	data := append([]byte(dst.String()+" "+from.String()+"\n"), b...)
	if err := os.WriteFile(name+".tmp", data, 0o600); err == nil {
		os.Rename(name+".tmp", name)
	}
}
