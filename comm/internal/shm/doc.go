// Package shm is the device layer of comm's shared-memory transport: the segment each rank
// owns and its peers map (segment create/open/parse/close), the single-producer
// single-consumer rings and fastboxes inside it and their record format, the doorbell pipe
// that wakes an owner's background goroutine, and the system calls the protocol needs
// (cross-memory attach, futex, yield). It knows nothing of messages' matching or of
// requests: the protocol that uses it is comm's (comm/shm.go). Linux and macOS only.
package shm
