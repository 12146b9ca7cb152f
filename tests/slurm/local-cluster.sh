#!/usr/bin/env bash
# tests/slurm/local-cluster.sh -- a REAL single-node SLURM cluster, with
# accounting, on this machine, for CI (.ci/run) and developers who want to run
# Snakemake's SLURM executor plugin for real.
#
#   tests/slurm/local-cluster.sh up       # install (if needed), start, smoke-test
#   tests/slurm/local-cluster.sh down     # stop the daemons recorded in the state dir
#   tests/slurm/local-cluster.sh status   # which recorded daemons are alive + sinfo;
#                                         # exit 0 only if the cluster is up and healthy
#   tests/slurm/local-cluster.sh env      # prints `export SLURM_CONF=... PATH=...`
#
# Typical caller:
#   tests/slurm/local-cluster.sh up
#   trap 'tests/slurm/local-cluster.sh down' EXIT
#   eval "$(tests/slurm/local-cluster.sh env)"   # every SLURM client needs it
#   snakemake --executor slurm ...
#
# Target machine: Debian 12, running as root, no systemd, no cgroups, 2 cores,
# 24 GiB. What it does and why (facts found on this kind of machine):
#
# * Packages (munge slurmctld slurmd slurm-client slurmdbd mariadb-server) are
#   installed with apt-get only when missing; `apt-get update` runs at most once,
#   only when the package lists are missing/stale or the first install fails.
#   Service start-up by the packages' maintainer scripts is suppressed
#   (policy-rc.d), we start every daemon ourselves.
# * All state -- configs, pid files, logs, spool dirs, the MariaDB datadir and
#   socket, the munge socket and key -- lives under one state dir,
#   $ATTNSIM_SLURM_DIR (default /tmp/attnsim-slurm). Nothing outside it is
#   written (apart from the packages): /etc/slurm/slurm.conf and
#   /etc/munge/munge.key are neither read nor touched, so a machine that
#   belongs to another cluster keeps its configuration. Every SLURM command
#   (this script's, the tests', Snakemake's) therefore needs SLURM_CONF set to
#   our slurm.conf: `local-cluster.sh env` prints it. The daemons get it from
#   this script's environment, and jobs inherit it from sbatch.
# * Snakemake's job-step plugin (snakemake-executor-plugin-slurm-jobstep 0.6)
#   removes every SLURM_* variable, SLURM_CONF included, before it runs `srun`
#   inside the job, and srun then finds no configuration ("DNS SRV lookup
#   failed"). `up` therefore writes $STATE/bin/srun, which sets SLURM_CONF and
#   execs the real srun; `env` puts $STATE/bin first on PATH, and jobs inherit
#   that PATH (sbatch --export=ALL).
# * Daemons run in the foreground (-F / -D), detached with setsid, stdin/out/err
#   redirected and extra fds closed, and their PIDs are recorded in
#   $STATE/pids/. They outlive this shell. `down` stops ONLY those PIDs (TERM,
#   then KILL after a timeout) -- never anything matched by name.
#     munged    as the munge user (setpriv, so munged itself has the recorded
#               PID; runuser would put another process in front), own socket.
#     mariadbd  unix socket only (--skip-networking), own datadir initialised
#               with mariadb-install-db, own socket; database slurm_acct_db and
#               user slurm are created.
#     slurmdbd  -D; slurmdbd.conf mode 600 owned by SlurmUser (root),
#               StorageType=accounting_storage/mysql, StorageHost=localhost.
#               Slurm passes no socket path to the MySQL client library, so
#               MYSQL_UNIX_PORT in slurmdbd's environment points the client
#               library (libmariadb) at our socket.
#     slurmctld -D, after the cluster is registered with `sacctmgr add cluster`.
#     slurmd    -D.
# * slurm.conf needs no cgroups: ProctrackType=proctrack/linuxproc,
#   TaskPlugin=task/affinity, SlurmUser=root, MpiDefault=none,
#   MailProg=/bin/true, SelectType=select/cons_tres + CR_CPU_Memory,
#   DefMemPerCPU (else one job takes the whole node's memory), MinJobAge=300,
#   node line from `slurmd -C` with NodeAddr=127.0.0.1 and RealMemory a little
#   under the machine's, one default partition `debug`.
#   AccountingStorageType=accounting_storage/slurmdbd and no
#   AccountingStorageEnforce: Snakemake's SLURM plugin polls `sacct` and hangs
#   forever without working accounting.
# * Our own munge socket is named in AuthInfo=socket=... (slurm.conf and
#   slurmdbd.conf) AND in slurm.conf's AccountingStoragePass: for connections to
#   slurmdbd, clients (sacctmgr, sacct) and slurmctld take the munge socket
#   from AccountingStoragePass, not AuthInfo.
# * MariaDB gets innodb_buffer_pool_size=512M and innodb_lock_wait_timeout=900,
#   else slurmdbd logs "Database settings not recommended values".
# * Debian's /usr/sbin/slurmctld, slurmd, slurmstepd are symlinks to *-wlm:
#   liveness checks compare /proc/PID/exe with the resolved path.
# * sacct shows a short job as a placeholder named "allocation" until
#   slurmctld has sent its start record (it does so every ~5 s); the smoke
#   test waits for the real record.
# * `up` is healthy only when `scontrol ping` says UP, the node is `idle` with a
#   slurmd start time from this start, `srun -N1 -n1` ran a job, and that job
#   shows up in `sacct`. Every wait is bounded ($ATTNSIM_SLURM_TIMEOUT, default
#   60 s); on failure the tail of the relevant daemon log is printed, whatever
#   was started is stopped again, and the exit status is non-zero.
#
# Environment:
#   ATTNSIM_SLURM_DIR      state dir (default /tmp/attnsim-slurm)
#   ATTNSIM_SLURM_TIMEOUT  seconds for each wait (default 60)
#   ATTNSIM_SLURM_PORT     slurmctld's TCP port; slurmd and slurmdbd use the next
#                          two (default 6817, SLURM's own defaults). Give a second
#                          cluster on the same machine other ports and state dir.

set -euo pipefail
set +m   # no job control: `setsid` must exec in place so that $! is the daemon

STATE_DIR=${ATTNSIM_SLURM_DIR:-/tmp/attnsim-slurm}
case $STATE_DIR in /*) ;; *) STATE_DIR=$PWD/$STATE_DIR ;; esac
STATE_DIR=${STATE_DIR%/}
TIMEOUT=${ATTNSIM_SLURM_TIMEOUT:-60}
STOP_TIMEOUT=30
CTLD_PORT=${ATTNSIM_SLURM_PORT:-6817}
SLURMD_PORT=$((CTLD_PORT + 1))
DBD_PORT=$((CTLD_PORT + 2))

CLUSTER=attnsim
PARTITION=debug
NODE=$(hostname -s)
DEF_MEM_PER_CPU=1024           # MB per allocated CPU when a job asks for none

ETC_DIR=$STATE_DIR/etc
PID_DIR=$STATE_DIR/pids
RUN_DIR=$STATE_DIR/run
LOG_DIR=$STATE_DIR/log
SPOOL_DIR=$STATE_DIR/spool
MUNGE_DIR=$STATE_DIR/munge
DB_DIR=$STATE_DIR/mariadb
BIN_DIR=$STATE_DIR/bin

SLURM_CONF_FILE=$ETC_DIR/slurm.conf
SLURMDBD_CONF_FILE=$ETC_DIR/slurmdbd.conf
MUNGE_KEY=$MUNGE_DIR/munge.key    # our own: /etc/munge/munge.key may belong to another cluster
MUNGE_SOCKET=$MUNGE_DIR/munge.socket.2
DB_SOCKET=$DB_DIR/mysqld.sock
DB_DATADIR=$DB_DIR/data
DB_NAME=slurm_acct_db
DB_USER=slurm
DB_PASS=attnsim-local-only     # unix socket only, throwaway database

PACKAGES=(munge slurmctld slurmd slurm-client slurmdbd mariadb-server)
DAEMONS=(munged mariadbd slurmdbd slurmctld slurmd)   # start order

export SLURM_CONF=$SLURM_CONF_FILE

START_US=${EPOCHREALTIME/./}

# ---------------------------------------------------------------- helpers --

log() {
    local now=${EPOCHREALTIME/./}
    local ms=$(( (now - START_US) / 1000 ))
    printf '[local-cluster %3d.%01ds] %s\n' $((ms / 1000)) $((ms % 1000 / 100)) "$*"
}

warn() { log "WARNING: $*" >&2; }

# Executable a recorded daemon must be running (guards against PID reuse).
# Resolved, because Debian's /usr/sbin/slurmctld -> slurmctld-wlm etc.
daemon_exe() {
    local path
    path=$(command -v "$1" 2>/dev/null) || return 0
    readlink -f "$path"
}

daemon_logs() {
    case $1 in
        mariadbd) echo "$LOG_DIR/mariadbd.log $LOG_DIR/mariadbd.out $LOG_DIR/mariadb-install-db.log" ;;
        *) echo "$LOG_DIR/$1.log $LOG_DIR/$1.out" ;;
    esac
}

recorded_pid() {
    local f=$PID_DIR/$1.pid
    if [[ -s $f ]]; then cat "$f"; fi
}

# Is the recorded daemon alive (and really that program, not a reused PID)?
daemon_alive() {
    local pid exe
    pid=$(recorded_pid "$1")
    [[ -n $pid ]] || return 1
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
    [[ $exe == "$(daemon_exe "$1")" ]]
}

any_daemon_recorded_alive() {
    local d
    for d in "${DAEMONS[@]}"; do daemon_alive "$d" && return 0; done
    return 1
}

show_logs() {
    local f n
    for f in $(daemon_logs "$1"); do
        [[ -s $f ]] || continue
        # *.out is the daemon's stderr (slurm daemons repeat their log there).
        n=40
        [[ $f == *.out && -s ${f%.out}.log ]] && n=10
        echo "----- last $n lines of $f -----" >&2
        tail -n "$n" "$f" >&2
    done
    echo "-----" >&2
}

# fail DAEMON MESSAGE: print the daemon's log tail, stop what we started, exit 1.
fail() {
    local daemon=$1; shift
    log "ERROR: $*" >&2
    [[ -n $daemon ]] && show_logs "$daemon"
    log "stopping whatever was started (logs stay in $LOG_DIR)" >&2
    stop_all || true
    exit 1
}

# start_daemon NAME CMD...: run CMD in its own session, detached, record PID.
start_daemon() {
    local name=$1; shift
    local out=$LOG_DIR/$name.out
    echo "=== $(date -Is) starting: $*" >"$out"
    (
        # Do not leak our fds (CI pipes, the lock file) into the daemon.
        for fd in "/proc/$BASHPID/fd/"*; do
            fd=${fd##*/}
            if ((fd > 2)); then eval "exec $fd>&-" 2>/dev/null || true; fi
        done
        exec setsid "$@" </dev/null >>"$out" 2>&1
    ) &
    local pid=$!
    echo "$pid" >"$PID_DIR/$name.pid"
    # Give exec a moment so /proc/PID/exe shows the daemon, then check it.
    local i
    for i in 1 2 3 4 5 6 7 8 9 10; do
        daemon_alive "$name" && break
        sleep 0.1
    done
    daemon_alive "$name" || fail "$name" "$name exited right after start"
    log "started $name (pid $pid)"
}

# wait_for DAEMON DESCRIPTION CMD...: retry CMD until it succeeds, for at most
# $TIMEOUT seconds; fail at once if DAEMON dies meanwhile.
wait_for() {
    local daemon=$1 what=$2; shift 2
    local deadline=$((SECONDS + TIMEOUT))
    while true; do
        if "$@" >/dev/null 2>&1; then
            log "$what: ok"
            return 0
        fi
        if [[ -n $daemon ]] && ! daemon_alive "$daemon"; then
            fail "$daemon" "$daemon died while waiting for: $what"
        fi
        ((SECONDS < deadline)) || fail "$daemon" "timed out after ${TIMEOUT}s waiting for: $what"
        sleep 0.5
    done
}

# stop_daemon NAME: TERM the recorded PID, wait, KILL after $STOP_TIMEOUT.
stop_daemon() {
    local name=$1 pid i
    pid=$(recorded_pid "$name")
    if [[ -z $pid ]]; then
        return 0
    fi
    if ! daemon_alive "$name"; then
        rm -f "$PID_DIR/$name.pid"
        return 0
    fi
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
        daemon_alive "$name" || break
        sleep 0.1
    done
    if daemon_alive "$name"; then
        warn "$name (pid $pid) still alive after ${STOP_TIMEOUT}s, sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
        for ((i = 0; i < 50; i++)); do
            daemon_alive "$name" || break
            sleep 0.1
        done
    fi
    if daemon_alive "$name"; then
        warn "$name (pid $pid) survived SIGKILL"
        return 1
    fi
    rm -f "$PID_DIR/$name.pid"
}

# --------------------------------------------------------------- packages --

packages_missing() {
    local p
    for p in "${PACKAGES[@]}"; do
        [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == "install ok installed" ]] || echo "$p"
    done
}

apt_lists_usable() {
    # Lists present, less than a day old, and every package has a candidate.
    compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null || return 1
    [[ -n $(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' -mmin -1440 -print -quit) ]] || return 1
    local p
    for p in "$@"; do
        apt-cache policy "$p" 2>/dev/null | grep -q 'Candidate: [0-9]' || return 1
    done
}

ensure_packages() {
    local missing
    mapfile -t missing < <(packages_missing)
    if ((${#missing[@]} == 0)); then
        log "packages: all installed"
        return 0
    fi
    ((EUID == 0)) || { log "ERROR: need root to install: ${missing[*]}" >&2; exit 1; }
    log "packages: installing ${missing[*]}"

    # Keep maintainer scripts from starting system-wide munge/mariadb/slurm.
    local policy=/usr/sbin/policy-rc.d made_policy=0
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod 755 "$policy"
        made_policy=1
    fi

    local updated=0 rc=0
    if ! apt_lists_usable "${missing[@]}"; then
        log "packages: apt-get update"
        apt-get update -qq || true
        updated=1
    fi
    # Wait for another apt/dpkg on a shared machine instead of failing at once.
    local install=(apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=600 "${missing[@]}")
    DEBIAN_FRONTEND=noninteractive "${install[@]}" >"$STATE_DIR/apt-install.log" 2>&1 || rc=$?
    if ((rc != 0 && updated == 0)); then
        log "packages: install failed (rc=$rc), running apt-get update and retrying"
        apt-get update -qq || true
        rc=0
        DEBIAN_FRONTEND=noninteractive "${install[@]}" >>"$STATE_DIR/apt-install.log" 2>&1 || rc=$?
    fi
    if ((made_policy)); then rm -f "$policy"; fi
    if ((rc != 0)); then
        tail -n 40 "$STATE_DIR/apt-install.log" >&2
        log "ERROR: apt-get install failed (rc=$rc), full log: $STATE_DIR/apt-install.log" >&2
        exit 1
    fi
    mapfile -t missing < <(packages_missing)
    if ((${#missing[@]})); then
        log "ERROR: still not installed: ${missing[*]}" >&2
        exit 1
    fi
    log "packages: installed"
}

# ---------------------------------------------------------------- configs --

make_dirs() {
    install -d -m 755 "$STATE_DIR" "$ETC_DIR" "$PID_DIR" "$RUN_DIR" "$LOG_DIR" \
        "$SPOOL_DIR" "$SPOOL_DIR/slurmctld" "$SPOOL_DIR/slurmd" "$DB_DIR" "$BIN_DIR"
    # munged insists its dirs are owned by it and not writable by others.
    install -d -m 755 -o munge -g munge "$MUNGE_DIR"
}

ensure_munge_key() {
    if [[ ! -s $MUNGE_KEY ]]; then
        log "creating munge key $MUNGE_KEY"
        dd if=/dev/urandom of="$MUNGE_KEY" bs=1024 count=1 status=none
    fi
    chown munge:munge "$MUNGE_KEY"
    chmod 400 "$MUNGE_KEY"
}

write_slurmdbd_conf() {
    local tmp=$SLURMDBD_CONF_FILE.tmp
    umask 077
    cat >"$tmp" <<EOF
# Generated by tests/slurm/local-cluster.sh -- do not edit.
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
DebugLevel=info
LogFile=$LOG_DIR/slurmdbd.log
PidFile=$RUN_DIR/slurmdbd.pid
StorageType=accounting_storage/mysql
# libmariadb connects to localhost over the unix socket named by
# MYSQL_UNIX_PORT, which local-cluster.sh sets to $DB_SOCKET.
StorageHost=localhost
StorageUser=$DB_USER
StoragePass=$DB_PASS
StorageLoc=$DB_NAME
EOF
    umask 022
    chown root:root "$tmp"
    chmod 600 "$tmp"
    mv -f "$tmp" "$SLURMDBD_CONF_FILE"
}

write_slurm_conf() {
    # Node line from the hardware slurmd sees, RealMemory a little under it.
    local hw mem
    hw=$(slurmd -C 2>/dev/null | head -n 1) || true
    [[ $hw == NodeName=* ]] || fail "" "slurmd -C printed no node line: $hw"
    mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$hw")
    [[ -n $mem ]] || fail "" "no RealMemory in: $hw"
    mem=$((mem * 95 / 100))
    hw=$(sed -e "s/NodeName=[^ ]*/NodeName=$NODE NodeAddr=127.0.0.1/" \
             -e "s/RealMemory=[0-9]*/RealMemory=$mem/" <<<"$hw")

    cat >"$SLURM_CONF_FILE.tmp" <<EOF
# Generated by tests/slurm/local-cluster.sh -- do not edit.
ClusterName=$CLUSTER
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
StateSaveLocation=$SPOOL_DIR/slurmctld
SlurmdSpoolDir=$SPOOL_DIR/slurmd
SlurmctldPidFile=$RUN_DIR/slurmctld.pid
SlurmdPidFile=$RUN_DIR/slurmd.pid
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info

# No cgroups on this machine.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
MpiDefault=none
MailProg=/bin/true
ReturnToService=2

SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
DefMemPerCPU=$DEF_MEM_PER_CPU
MinJobAge=300

# Accounting through slurmdbd (Snakemake's SLURM plugin polls sacct).
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
# For connections to slurmdbd, Slurm clients and slurmctld take the munge
# socket from AccountingStoragePass, not from AuthInfo.
AccountingStoragePass=$MUNGE_SOCKET
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
JobCompType=jobcomp/none
# Keep sbatch --comment in accounting: the SLURM plugin puts the rule and wildcards there (sacct -o Comment).
AccountingStoreFlags=job_comment

$hw State=UNKNOWN
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    mv -f "$SLURM_CONF_FILE.tmp" "$SLURM_CONF_FILE"
}

# srun that finds our cluster even when its caller dropped SLURM_CONF (see top).
write_srun_wrapper() {
    local real=
    # The real srun: skip our own wrapper, which is on PATH after `eval "$(... env)"`.
    for real in $(type -ap srun) ''; do
        [[ $real -ef $BIN_DIR/srun ]] || break
    done
    [[ -n $real ]] || fail "" "srun not found"
    cat >"$BIN_DIR/srun.tmp" <<EOF
#!/bin/sh
# Generated by tests/slurm/local-cluster.sh: Snakemake's job-step plugin runs srun
# without SLURM_* variables, SLURM_CONF included.
SLURM_CONF=$SLURM_CONF_FILE exec $real "\$@"
EOF
    chmod 755 "$BIN_DIR/srun.tmp"
    mv -f "$BIN_DIR/srun.tmp" "$BIN_DIR/srun"
}

# ---------------------------------------------------------------- daemons --

munge_ok() {
    timeout 5 munge -n -S "$MUNGE_SOCKET" | timeout 5 unmunge -S "$MUNGE_SOCKET"
}

start_munged() {
    start_daemon munged setpriv --reuid=munge --regid=munge --init-groups \
        munged -F --key-file="$MUNGE_KEY" --socket="$MUNGE_SOCKET" \
        --pid-file="$MUNGE_DIR/munged.pid" --seed-file="$MUNGE_DIR/munged.seed"
    wait_for munged "munge credential round trip" munge_ok
}

mysql_root() {
    timeout 20 mariadb --no-defaults --protocol=socket --socket="$DB_SOCKET" -u root
}

start_mariadbd() {
    if [[ ! -d $DB_DATADIR/mysql ]]; then
        log "initialising MariaDB datadir $DB_DATADIR"
        rm -rf "$DB_DATADIR"
        install -d -m 750 "$DB_DATADIR"
        timeout 120 mariadb-install-db --no-defaults --user=root --datadir="$DB_DATADIR" \
            --auth-root-authentication-method=socket --skip-test-db \
            >"$LOG_DIR/mariadb-install-db.log" 2>&1 ||
            fail mariadbd "mariadb-install-db failed"
    fi
    install -d -m 750 "$DB_DIR/tmp"
    start_daemon mariadbd mariadbd --no-defaults --user=root \
        --datadir="$DB_DATADIR" --socket="$DB_SOCKET" --skip-networking \
        --pid-file="$DB_DIR/mariadbd.pid" --log-error="$LOG_DIR/mariadbd.log" \
        --tmpdir="$DB_DIR/tmp" \
        --innodb-buffer-pool-size=512M --innodb-lock-wait-timeout=900
    wait_for mariadbd "MariaDB answering on $DB_SOCKET" \
        timeout 5 mariadb-admin --no-defaults --protocol=socket --socket="$DB_SOCKET" -u root ping
    mysql_root <<EOF || fail mariadbd "creating database $DB_NAME / user $DB_USER failed"
CREATE DATABASE IF NOT EXISTS $DB_NAME;
CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASS';
ALTER USER '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASS';
GRANT ALL PRIVILEGES ON $DB_NAME.* TO '$DB_USER'@'localhost';
FLUSH PRIVILEGES;
EOF
    log "database $DB_NAME and user $DB_USER ready"
}

cluster_registered() {
    timeout 10 sacctmgr -n -P list cluster format=cluster 2>/dev/null | grep -qx "$CLUSTER"
}

start_slurmdbd() {
    MYSQL_UNIX_PORT=$DB_SOCKET start_daemon slurmdbd slurmdbd -D
    wait_for slurmdbd "slurmdbd answering sacctmgr" timeout 10 sacctmgr -n -P list cluster
    if ! cluster_registered; then
        timeout 20 sacctmgr -i add cluster "$CLUSTER" >>"$LOG_DIR/sacctmgr.log" 2>&1 ||
            fail slurmdbd "sacctmgr add cluster $CLUSTER failed (see $LOG_DIR/sacctmgr.log)"
        cluster_registered || fail slurmdbd "cluster $CLUSTER not registered after sacctmgr add cluster"
        log "registered cluster $CLUSTER in the accounting database"
    else
        log "cluster $CLUSTER already registered in the accounting database"
    fi
}

controller_up() {
    timeout 10 scontrol ping 2>/dev/null | grep -q 'is UP'
}

start_slurmctld() {
    start_daemon slurmctld slurmctld -D
    wait_for slurmctld "scontrol ping: controller UP" controller_up
}

# Node idle and its slurmd started at/after $1 (epoch seconds).
node_fresh_idle() {
    local since=$1 state start
    state=$(timeout 10 sinfo -h -n "$NODE" -o %T 2>/dev/null) || return 1
    [[ $state == idle ]] || return 1
    start=$(timeout 10 scontrol show node "$NODE" 2>/dev/null |
        sed -n 's/.*SlurmdStartTime=\([^ ]*\).*/\1/p') || return 1
    [[ -n $start && $start != None ]] || return 1
    (($(date -d "$start" +%s) >= since))
}

start_slurmd() {
    local since
    since=$(($(date +%s) - 1))
    start_daemon slurmd slurmd -D
    wait_for slurmd "node $NODE idle with a fresh slurmd" node_fresh_idle "$since"
}

smoke_test() {
    local out jobid deadline line
    log "smoke test: srun -N1 -n1 (timeout ${TIMEOUT}s)"
    # shellcheck disable=SC2016  # $SLURM_JOB_ID is expanded inside the job
    out=$(timeout "$TIMEOUT" srun -N1 -n1 -J attnsim-smoke -t 1 sh -c 'echo "jobid=$SLURM_JOB_ID"' 2>&1) ||
        fail slurmd "srun failed: $out"
    jobid=$(sed -n 's/^jobid=\([0-9]*\)$/\1/p' <<<"$out")
    [[ -n $jobid ]] || fail slurmd "srun printed no job id: $out"
    log "smoke test: job $jobid ran, waiting for it in sacct"
    deadline=$((SECONDS + TIMEOUT))
    while true; do
        # Wait for the full record: until slurmctld has sent the job's start
        # record (it assigns accounting ids to new jobs every few seconds),
        # sacct shows a placeholder named "allocation", and Snakemake's
        # plugin, which looks jobs up with `sacct --name`, would not find it.
        line=$(timeout 10 sacct -X -n -P -j "$jobid" -o JobID,JobName,State,ExitCode 2>/dev/null || true)
        [[ $line == "$jobid|attnsim-smoke|COMPLETED|0:0" ]] && break
        ((SECONDS < deadline)) ||
            fail slurmdbd "job $jobid not COMPLETED in sacct after ${TIMEOUT}s (sacct: '${line}')"
        sleep 1
    done
    log "smoke test: sacct: $line"
}

healthy() {
    local d
    for d in "${DAEMONS[@]}"; do daemon_alive "$d" || return 1; done
    munge_ok >/dev/null 2>&1 || return 1
    controller_up || return 1
    [[ $(timeout 10 sinfo -h -n "$NODE" -o %T 2>/dev/null) =~ ^(idle|mixed|allocated|completing)$ ]] || return 1
    cluster_registered
}

# PIDs of slurmstepd processes forked by our slurmd (they inherit its
# SLURM_CONF). Only looked at, never killed: jobs are ended with scancel.
our_stepds() {
    local exe p
    exe=$(daemon_exe slurmstepd)
    [[ -n $exe ]] || return 0
    for p in /proc/[0-9]*; do
        [[ $(readlink "$p/exe" 2>/dev/null) == "$exe" ]] || continue
        tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$SLURM_CONF_FILE" &&
            echo "${p#/proc/}"
    done
    return 0
}

# Cancel leftover jobs (while slurmctld and slurmd still run) so that no
# slurmstepd or job process outlives the cluster.
cancel_jobs() {
    daemon_alive slurmctld || return 0
    local jobs i
    jobs=$(timeout 10 squeue -h -o %A 2>/dev/null | tr '\n' ' ') || return 0
    [[ -n ${jobs// /} ]] || return 0
    log "cancelling jobs: $jobs"
    # shellcheck disable=SC2086
    timeout 10 scancel $jobs 2>/dev/null || true
    for ((i = 0; i < 2 * STOP_TIMEOUT; i++)); do
        [[ -z $(timeout 10 squeue -h -o %A 2>/dev/null) && -z $(our_stepds) ]] && return 0
        sleep 0.5
    done
    warn "after ${STOP_TIMEOUT}s, squeue still lists: $(timeout 10 squeue -h -o %A | tr '\n' ' ')" \
        "slurmstepd pids: $(our_stepds | tr '\n' ' ')"
}

stop_all() {
    local rc=0 i
    cancel_jobs || true
    for ((i = ${#DAEMONS[@]} - 1; i >= 0; i--)); do
        stop_daemon "${DAEMONS[i]}" || rc=1
    done
    local left
    left=$(our_stepds | tr '\n' ' ')
    [[ -z $left ]] || warn "slurmstepd processes of this cluster still running: $left"
    return "$rc"
}

# --------------------------------------------------------------- commands --

cmd_up() {
    log "state dir: $STATE_DIR"
    install -d -m 755 "$STATE_DIR"
    ensure_packages
    make_dirs
    if healthy; then
        log "cluster $CLUSTER is already up and healthy"
        write_srun_wrapper
        cmd_status || true
        return 0
    fi
    if any_daemon_recorded_alive; then
        log "cluster is partly up or unhealthy: stopping it first"
        stop_all || fail "" "could not stop the old daemons"
    fi
    ensure_munge_key
    write_slurmdbd_conf
    write_slurm_conf
    write_srun_wrapper
    start_munged
    start_mariadbd
    start_slurmdbd
    start_slurmctld
    start_slurmd
    smoke_test
    log "cluster $CLUSTER is UP (slurm.conf: $SLURM_CONF_FILE, logs: $LOG_DIR)"
}

cmd_down() {
    if ! any_daemon_recorded_alive; then
        rm -f "$PID_DIR"/*.pid 2>/dev/null || true
        log "nothing running from $STATE_DIR"
        return 0
    fi
    if stop_all; then
        log "cluster stopped"
    else
        log "ERROR: some daemons could not be stopped" >&2
        return 1
    fi
}

cmd_status() {
    local d pid any=0
    echo "state dir: $STATE_DIR"
    for d in "${DAEMONS[@]}"; do
        pid=$(recorded_pid "$d")
        if daemon_alive "$d"; then
            printf '  %-10s running (pid %s)\n' "$d" "$pid"
            any=1
        elif [[ -n $pid ]]; then
            printf '  %-10s DEAD (recorded pid %s)\n' "$d" "$pid"
        else
            printf '  %-10s not running\n' "$d"
        fi
    done
    if daemon_alive slurmctld; then
        timeout 10 scontrol ping || true
        timeout 10 sinfo || true
    fi
    if ((!any)); then
        echo "cluster is down"
        return 1
    fi
    if ! healthy; then
        echo "cluster is NOT healthy (partly up, or not answering)"
        return 1
    fi
    echo "cluster is up"
}

main() {
    local cmd=${1:-}
    case $cmd in
        up | down)
            install -d -m 755 "$STATE_DIR"
            # Serialise up/down on the same state dir (fd 9 is not inherited
            # by the daemons: start_daemon closes it).
            exec 9>"$STATE_DIR/.lock"
            flock -w "$((TIMEOUT * 3))" 9 || { log "ERROR: $STATE_DIR/.lock is held" >&2; exit 1; }
            "cmd_$cmd"
            ;;
        status) cmd_status ;;   # exit status 0 only when up and healthy
        env)
            echo "export SLURM_CONF=$SLURM_CONF_FILE"
            echo "export PATH=$BIN_DIR:\$PATH"
            ;;
        *)
            echo "usage: $0 up|down|status|env" >&2
            exit 2
            ;;
    esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then main "$@"; fi
