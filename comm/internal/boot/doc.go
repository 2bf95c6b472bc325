// Package boot is the bootstrap protocol of a gorun job, apart from every transport: the
// identity a process reads from its launcher's environment (identity.go), the handshake that
// opens every connection with proof of the job's secret (hello.go, handshake.go), and the
// rendezvous at which every rank registers and receives the table of all ranks
// (rendezvous.go). comm builds its links on it; launchers reach it through comm/bootstrap,
// which links no transport.
package boot
