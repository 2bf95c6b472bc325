// Package launcher starts the ranks of an SPMD job and supervises them, as mpirun does: it is
// the logic behind the gorun command (cmd/gorun is a thin main over Main).
//
// A job is N processes of one program. Each rank gets the bootstrap contract of package
// comm/jobenv in its environment (GORUN_RANK, GORUN_SIZE, GORUN_LOCAL_RANK, GORUN_LOCAL_SIZE,
// GORUN_COORD, GORUN_COORD_LAUNCHER, GORUN_JOB_ID, GORUN_SECRET, and GORUN_PEER_TIMEOUT,
// GORUN_TRANSPORT and GORUN_IFACE when set), on top of gorun's own environment and the -x
// exports. The job id and the 32-byte secret are fresh per job from crypto/rand. gorun opens
// the rendezvous listener (GORUN_COORD) before the ranks start and serves it itself
// (comm/bootstrap.ServeRendezvous): loopback when all ranks are local, else the address on
// --iface or the one that routes to the hosts.
//
// Where ranks run: this host; the hosts of a hostfile or -H list (Host, ParseHostfile, Map),
// those that are not this machine reached over ssh, one session per rank (see remote.go); or,
// inside a Slurm allocation, a job step that srun starts (runSrun), whose tasks bootstrap from
// Slurm's variables.
//
// Supervision follows mpirun and srun:
//   - every rank runs in its own process group, so a signal reaches the processes it started;
//     on Linux a rank also dies if gorun is killed (parent-death signal);
//   - stdout and stderr are forwarded line by line: a line is written whole or not at all, so
//     lines of different ranks never mix (only a line longer than 1 MiB is forwarded in
//     pieces); --tag-output puts "[rank] " before each line, as MPICH's -prepend-rank;
//   - stdin goes to rank 0 (or the rank named by --stdin); the others read /dev/null;
//   - SIGINT, SIGTERM and SIGHUP send SIGTERM to every rank and SIGKILL after a grace period
//     (at once on a second signal); SIGQUIT, SIGUSR1 and SIGUSR2 are passed on, so SIGQUIT
//     makes every Go rank print its goroutine stacks;
//   - when a rank exits non-zero or dies by a signal, gorun names it ("rank 2 (pid 1234)
//     exited with code 3; terminating 3 other ranks"), sends SIGTERM to the others and exits
//     with the highest code of the ranks that failed (128+signal for one a signal killed), as
//     srun does. When a rank's death makes its peers fail too, the rank that failed first is
//     named and the others are listed after it ("gorun: also failed (after rank 2): ...").
//     Time decides: the kernel's order of exits, corrected by what the ranks print: a rank
//     that reports losing a peer (comm's PeerError, "rank 2: connection to ... closed by the
//     peer") failed after that peer, whichever exit the kernel completed first, and a peer so
//     reported that has not exited within a moment (stopped, hung, starved of CPU) is named
//     first ("gorun: rank 1 (pid 1234) was reported lost by rank 2 and has not exited;
//     terminating it and 1 other rank"). A host lost to ssh, noticed seconds late, is named
//     before the ranks that lost their peers there;
//   - a remote rank whose ssh fails or loses its connection (ssh exits 255 before the rank's
//     status arrives) makes gorun name the host, tear down the job and exit 255.
//
// Resources, checked before any rank starts:
//   - more ranks on this host than its cores (runtime.NumCPU: the CPUs of gorun's affinity
//     mask) get a one-line warning ("gorun: warning: 1000 ranks on this host's 2 cores: ..."),
//     which --oversubscribe silences; Open MPI refuses such a job without --oversubscribe,
//     gorun runs it. The ranks of every host whose ranks outnumber its cores (a remote host's
//     cores: its slots) get GORUN_OVERSUBSCRIBED=1, so that comm waits politely there;
//   - ranks that share a host get GOMAXPROCS set to their share of its cores (cores / ranks
//     on the host, at least 1; this host's cores as Go's default GOMAXPROCS counts them in
//     gorun, under a cgroup CPU limit too; a remote host's: its slots) unless gorun's
//     environment or a -x export sets GOMAXPROCS;
//   - gorun holds about 7 open files per local rank (8 per remote one); a job that needs more
//     than gorun's limit fails at once naming both ("gorun: 3000 ranks need about 21032 open
//     files in gorun; the limit is 1024 ..."). Go raises a program's soft limit to (one below)
//     its hard limit at start; gorun does not set the limit itself, so os/exec starts the ranks with the
//     soft limit gorun inherited (what programs using select(2) expect), and Go ranks raise
//     theirs in turn. A comm rank needs about two per rank of the job (a socket per peer, a
//     shared-memory segment per rank on its host), which the same hard limit allows when
//     gorun's own need does.
//
// PROGRAM may be a path, a Go main package directory (built with go build into a per-user
// cache), a name on PATH, a program beside the gorun executable, or a command cmd/NAME of the
// module around the working directory or of this project's module (see Resolver.Resolve).
package launcher
