# A one-node Slurm cluster (slurmctld + slurmd + munged on this machine), as in RECIPES.md
# section 1. Source it, then: slurm_up DIR (exports SLURM_CONF); ... slurm_down DIR. The node
# has 4 CPUs configured whatever the machine has (SlurmdParameters=config_overrides), and every
# step gets reserved ports (MpiParams=ports), which gorun's ranks use for their rendezvous.
# Every daemon is stopped by its PID in slurm_down.

slurm_up() {
	local d=$1 h
	h=$(hostname -s)
	mkdir -p "$d/state" "$d/spool"
	if ! getent hosts "$h" >/dev/null; then
		echo "127.0.1.1 $h" >>/etc/hosts # slurmctld must resolve its own host name
	fi
	if [ ! -s /etc/munge/munge.key ]; then
		mungekey --create --force --keyfile=/etc/munge/munge.key
	fi
	chown munge:munge /etc/munge/munge.key
	chmod 400 /etc/munge/munge.key
	install -d -o munge -g munge -m 755 /run/munge /var/log/munge /var/lib/munge
	if [ -s /run/munge/munged.pid ] && kill -0 "$(cat /run/munge/munged.pid)" 2>/dev/null; then
		: # a munged already runs (not ours: slurm_down leaves it alone)
	else
		runuser -u munge -- /usr/sbin/munged # daemonizes; PID in /run/munge/munged.pid
		cp /run/munge/munged.pid "$d/munged.pid"
	fi
	cat >"$d/slurm.conf" <<CONF
ClusterName=ci
SlurmctldHost=$h
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
SlurmctldPidFile=$d/slurmctld.pid.unused
SlurmdPidFile=$d/slurmd.pid.unused
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiParams=ports=12000-12999
NodeName=$h CPUs=4 State=UNKNOWN
PartitionName=ci Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
	export SLURM_CONF=$d/slurm.conf
	setsid slurmctld -D -i >"$d/ctld.out" 2>&1 </dev/null &
	echo $! >"$d/ctld.pid"
	setsid slurmd -D >"$d/slurmd.out" 2>&1 </dev/null &
	echo $! >"$d/slurmd.pid"
	local i
	for i in $(seq 150); do
		[ "$(timeout 5 sinfo -h -o %t 2>/dev/null)" = idle ] && return 0
		sleep 0.2
	done
	echo "slurm did not come up; slurmctld log:" >&2
	tail -20 "$d/slurmctld.log" "$d/slurmd.log" >&2
	return 1
}

slurm_down() {
	local d=$1 f
	for f in slurmd.pid ctld.pid munged.pid; do
		[ -s "$d/$f" ] && kill "$(cat "$d/$f")" 2>/dev/null
	done
	return 0
}
