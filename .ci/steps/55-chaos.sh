#!/usr/bin/env bash
# Chaos suite of the job fabric (issue 21): faults injected into a checksummed collectives
# workload (internal/chaos/worker) run by gorun on this host and across 2 network-namespace
# hosts: kill -9, SIGSTOP/SIGCONT within and beyond the peer timeout, a link down and up, a
# byte of a TCP stream between the hosts corrupted by a proxy (an iptables REDIRECT in host 2
# sends its connections to host 1 through it), a rank that stops receiving while the others
# flood it, strangers with garbage and with replayed hellos. The driver (internal/chaos/cmd/
# chaos) prints a PASS or FAIL line per scenario and exits 1 if any failed. About 3 minutes
# on 2 cores. CHAOS_SEED varies the faults' choices (printed; default 1); CHAOS_RUN selects
# scenarios by a regexp.
set -euo pipefail
cd "$(dirname "$0")/../.."
DEBIAN_FRONTEND=noninteractive flock /tmp/apt.lock apt-get install -y -qq --no-install-recommends \
	openssh-server iproute2 iptables >/dev/null

# The namespaces h1..hN, the bridge and the veths have fixed names (netns-hosts.sh): one user
# of them at a time on a machine, the cluster step included.
exec 9>/tmp/gorun-50-cluster.lock
flock -w 1200 9 || { echo "55-chaos: another run holds /tmp/gorun-50-cluster.lock" >&2; exit 1; }
work=$(mktemp -d /tmp/gorun-chaos.XXXXXX)
chmod 755 "$work"
source .ci/lib/netns-hosts.sh
nhosts=2
cleanup() {
	set +e
	netns_down "$work/ns" "$nhosts"
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/bin/gorun" ./cmd/gorun
go build -o "$work/bin/worker" ./internal/chaos/worker
go build -o "$work/bin/chaos" ./internal/chaos/cmd/chaos
netns_up "$work/ns" "$nhosts"
ssh_args="-i $work/ns/id -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
# iptables picks its backend (nft or legacy) itself; the nat table must be usable in a host.
ip netns exec h2 iptables -t nat -L OUTPUT -n >/dev/null

timeout 600 "$work/bin/chaos" --bin "$work/bin" --hosts "$nhosts" --ssh-args "$ssh_args" \
	--peer-timeout 3s --seed "${CHAOS_SEED:-1}" --run "${CHAOS_RUN:-}"
