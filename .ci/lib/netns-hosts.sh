# Several "hosts" on one machine: network namespaces h1..hN on a bridge, each with its own
# address (10.99.0.i/24) and its own sshd (root, key only), as in RECIPES.md section 4.
# Source it, then: netns_up DIR N; ... netns_down DIR N. The gorun side (root namespace) has
# 10.99.0.254 on the bridge. $NETNS_SSH is the ssh command line that reaches the hosts.
# Needs root, iproute2 and openssh-server. Every daemon is stopped by its PID in netns_down.
# Set NETNS_BRIDGE, NETNS_HOST (host name prefix), NETNS_NET (the /24's first three octets)
# and NETNS_VETH (link name prefix) before sourcing to run a second set beside CI's (the bench
# scripts do).

NETNS_BRIDGE=${NETNS_BRIDGE:-brgorun}
NETNS_HOST=${NETNS_HOST:-h}
NETNS_NET=${NETNS_NET:-10.99.0}
NETNS_VETH=${NETNS_VETH:-vgorun}

netns_up() {
	local d=$1 n=$2 i h a
	mkdir -p /run/sshd "$d"
	chmod 700 "$d"
	ssh-keygen -q -t ed25519 -N '' -f "$d/id"
	cp "$d/id.pub" "$d/authorized_keys"
	ip link add "$NETNS_BRIDGE" type bridge
	ip link set "$NETNS_BRIDGE" up
	ip addr add $NETNS_NET.254/24 dev "$NETNS_BRIDGE"
	for i in $(seq "$n"); do
		h=$NETNS_HOST$i a=$NETNS_NET.$i
		mkdir -p "$d/$h"
		ip netns add "$h"
		ip link add "$NETNS_VETH$i" type veth peer name eth0 netns "$h"
		ip link set "$NETNS_VETH$i" master "$NETNS_BRIDGE" up
		ip -n "$h" addr add "$a/24" dev eth0
		ip -n "$h" link set eth0 up
		ip -n "$h" link set lo up
		ssh-keygen -q -t ed25519 -N '' -f "$d/$h/hostkey"
		printf '%s\n' "ListenAddress $a" "HostKey $d/$h/hostkey" "PidFile $d/$h/sshd.pid" \
			"AuthorizedKeysFile $d/authorized_keys" "PermitRootLogin prohibit-password" \
			"PasswordAuthentication no" "UsePAM no" "StrictModes no" "MaxStartups 64:30:128" \
			"MaxSessions 64" >"$d/$h/sshd_config"
		# Its own UTS namespace gives each host its own host name (gorun's ranks compare them).
		ip netns exec "$h" unshare --uts sh -c "hostname $h && exec /usr/sbin/sshd -f $d/$h/sshd_config -E $d/$h/log"
	done
	NETNS_SSH="ssh -i $d/id -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=3"
	for i in $(seq "$n"); do
		for _ in $(seq 50); do
			[ -s "$d/$NETNS_HOST$i/sshd.pid" ] && timeout 10 $NETNS_SSH -o BatchMode=yes root@$NETNS_NET.$i true 2>/dev/null && break
			sleep 0.1
		done
	done
}

netns_down() {
	local d=$1 n=$2 i
	for i in $(seq "$n"); do
		[ -s "$d/$NETNS_HOST$i/sshd.pid" ] && kill "$(cat "$d/$NETNS_HOST$i/sshd.pid")" 2>/dev/null
		# Whatever still runs in the namespace (a rank cut off from its peers) goes with it.
		for p in $(ip netns pids "$NETNS_HOST$i" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
		ip netns del "$NETNS_HOST$i" 2>/dev/null
	done
	ip link del "$NETNS_BRIDGE" 2>/dev/null
	return 0
}

# netns_mesh N (after netns_up): a cable between every pair of hosts, as a Thunderbolt full
# mesh has: host i reaches host j over its own veth "m<j>" (tc on it shapes that pair alone).
# Each host gets the address 10.98.0.i on lo, reached by the others through the direct cable;
# the gorun side has 10.98.0.254, reached over the bridge. Run the ranks with
# --iface 10.98.0.0/24 to put their data on the mesh. netns_down removes it all.
netns_mesh() {
	local n=$1 i j
	ip addr add 10.98.0.254/32 dev "$NETNS_BRIDGE"
	for i in $(seq "$n"); do
		ip -n "$NETNS_HOST$i" addr add "10.98.0.$i/32" dev lo
		ip -n "$NETNS_HOST$i" route add 10.98.0.254/32 dev eth0 src "10.98.0.$i"
		ip route add "10.98.0.$i/32" via "$NETNS_NET.$i"
	done
	for i in $(seq "$n"); do
		for j in $(seq $((i + 1)) "$n"); do
			ip link add "m$j" netns "$NETNS_HOST$i" type veth peer name "m$i" netns "$NETNS_HOST$j"
			ip -n "$NETNS_HOST$i" link set "m$j" up
			ip -n "$NETNS_HOST$j" link set "m$i" up
			ip -n "$NETNS_HOST$i" route add "10.98.0.$j/32" dev "m$j" src "10.98.0.$i"
			ip -n "$NETNS_HOST$j" route add "10.98.0.$i/32" dev "m$i" src "10.98.0.$j"
		done
	done
}
