#!/usr/bin/env bash
# CI against a real SLURM: a one-node cluster on 127.0.0.1 runs `fig9` (the census), `regpath lemma1` and one small
# vit_train (workflow/config/ci_slurm.yaml), then `fig9` with the default config (run fig9-default: what a user runs)
# and `census_grid` (grouped jobs) through workflow/profiles/slurm as shipped plus --slurm-status-command squeue, one
# run after the other, each printing
# `slurm_wall_s=<seconds> run=<name> submitted=<n> (<rule or group> x<n>, ...) local=<n> load="<loadavg>"`. Only the
# compute rules may be submitted (the others are localrules), every SLURM log must be kept, and the tables must be
# identical to a local run's; a job that fails on SLURM must make Snakemake fail, not hang.
# Needs root and apt-get (Debian's slurmctld, slurmd, slurm-client, munge); where SLURM
# cannot be installed it prints "SKIP: <reason>" and exits 0. Every step is bounded in time; the daemons it starts are
# stopped by pid on exit, also on failure.
# Usage: .ci/slurm_check.sh   (after `make test` has built .venv; SLURM_CHECK_KEEP=1 keeps the runs' folders)
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
SNAKEMAKE="${SNAKEMAKE:-$REPO/.venv/bin/snakemake}"
CI_CONFIG=workflow/config/ci_slurm.yaml
STATE=/var/lib/maxmargin-slurm-ci   # our daemons' pids, logs and spool dirs (kept between runs to find stale pids)
CONF=/etc/slurm/slurm.conf          # fixed path: the plugin's job step runs srun without the SLURM_* environment
MARKER="# Written by maxmargin .ci/slurm_check.sh"
START=$SECONDS

say() { printf '[slurm_check %3ds] %s\n' "$((SECONDS - START))" "$*"; }
skip() { echo "SKIP: $*"; exit 0; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# ---- (a) can SLURM be installed here? --------------------------------------------------------------------------------
[[ -x "$SNAKEMAKE" ]] || fail "$SNAKEMAKE not found: run \`make test\` (it builds .venv) first"
[[ "$(id -u)" == 0 ]] || skip "not root: installing and starting SLURM needs root"
command -v apt-get >/dev/null || skip "no apt-get: SLURM is installed from Debian's packages"
if [[ -e "$CONF" ]] && ! grep -qxF "$MARKER" "$CONF"; then
    skip "$CONF exists and was not written by this script: not touching a real cluster's configuration"
fi

# Only our own daemons are ever stopped: the pids this script recorded in $STATE, checked against their names.
stop_pid() {  # stop_pid NAME: SIGTERM the pid in $STATE/NAME.pid if that process still is NAME, then SIGKILL
    local file="$STATE/$1.pid" pid
    [[ -f "$file" ]] || return 0
    pid="$(cat "$file")"
    if [[ -n "$pid" && "$(cat "/proc/$pid/comm" 2>/dev/null)" == "$1" ]]; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do [[ -e "/proc/$pid" ]] || break; sleep 0.1; done
        [[ -e "/proc/$pid" ]] && kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$file"
}
stop_daemons() {
    if [[ -f "$STATE/slurmctld.pid" ]]; then  # cancel whatever is still queued on our cluster (all of it is ours)
        timeout 10 squeue -h -o %i 2>/dev/null | xargs -r timeout 10 scancel 2>/dev/null || true
        for _ in $(seq 20); do  # up to 10 s for slurmd to end the cancelled jobs' processes
            [[ -z "$(timeout 5 squeue -h -t running,completing -o %i 2>/dev/null)" ]] && break
            sleep 0.5
        done
    fi
    stop_pid slurmd
    stop_pid slurmctld
    stop_pid munged
}
WORK="$(mktemp -d /tmp/maxmargin-slurm-check.XXXXXX)"
STARTED=""
declare -A PIDS=()  # background runs, by name
on_exit() {
    local rc=$?
    trap - EXIT
    local pid
    # runs still going (a failure elsewhere, or an interrupt): TERM lets Snakemake scancel its jobs while slurmctld
    # is still up; `timeout -k` SIGKILLs a Snakemake that has not exited 15 s later
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [[ $rc != 0 && -d "$STATE" ]]; then
        for log in "$STATE"/slurmctld.log "$STATE"/slurmd.log; do
            [[ -f "$log" ]] && { echo "---- last lines of $log"; tail -n 20 "$log"; }
        done
    fi
    stop_daemons
    # our slurm.conf goes too: with a slurm.conf but no slurmctld, every `scontrol` (the plugin runs one whenever
    # Snakemake starts) waits for a controller that never answers
    if [[ -f "$CONF" ]] && grep -qxF "$MARKER" "$CONF"; then rm -f "$CONF"; fi
    if [[ -n "${SLURM_CHECK_KEEP:-}" ]]; then say "kept $WORK"; else rm -rf "$WORK"; fi
    [[ -z "$STARTED" ]] || say "stopped the daemons$([[ $rc == 0 ]] || echo " (check failed, exit $rc)")"
    exit "$rc"
}
trap on_exit EXIT
trap "exit 130" INT
trap "exit 143" TERM  # so that an interrupted check still stops its daemons

# ---- (b) install -----------------------------------------------------------------------------------------------------
PACKAGES=(slurmctld slurmd slurm-client munge)
have_slurm() { command -v slurmctld && command -v slurmd && command -v sbatch && command -v munged; } >/dev/null
if ! have_slurm; then
    say "installing ${PACKAGES[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt_install() { timeout 300 apt-get install -y -q --no-install-recommends "${PACKAGES[@]}" >"$WORK/apt.log" 2>&1; }
    if ! apt_install; then
        # a fresh image has no package lists yet
        timeout 120 apt-get update -q >>"$WORK/apt.log" 2>&1 || true
        apt_install || skip "apt-get install ${PACKAGES[*]} failed: $(tail -n 1 "$WORK/apt.log")"
    fi
    have_slurm || skip "installed ${PACKAGES[*]} but slurmctld/slurmd/sbatch/munged are not on PATH"
fi

# ---- stop what a previous run left behind, then start afresh
stop_daemons

# ---- (c) a one-node cluster on 127.0.0.1 ------------------------------------------------------------------------------
NODE="$(hostname -s)"
CPUS="$(nproc)"
MEM_MB="$(awk '/^MemTotal:/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)"  # a bit below the machine's: slurmd
                                                                          # marks a node invalid that has less
rm -rf "$STATE" && mkdir -p "$STATE/ctld" "$STATE/d" /etc/slurm
cat >"$CONF" <<EOF
$MARKER
# A one-node test cluster on 127.0.0.1; this file is removed when the check ends.
ClusterName=maxmargin-ci
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
# no cgroups: they are often unavailable or read-only in CI containers
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
# no slurmdbd: the runs poll job status with squeue (SLURM_CI below), which sees a finished job for MinJobAge seconds
AccountingStorageType=accounting_storage/none
MinJobAge=300
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/slurmctld.pidfile
SlurmdPidFile=$STATE/slurmd.pidfile
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=ci Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF

if timeout 5 munge -n </dev/null 2>/dev/null | timeout 5 unmunge >/dev/null 2>&1; then
    say "using the munged already running"
else
    if [[ ! -s /etc/munge/munge.key ]]; then
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
        chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
    fi
    install -d -o munge -g munge -m 0755 /run/munge
    STARTED=yes
    # setpriv execs (no fork), so $! is munged's own pid
    setpriv --reuid=munge --regid=munge --clear-groups munged --foreground >"$STATE/munged.out" 2>&1 &
    echo $! >"$STATE/munged.pid"
    for _ in $(seq 50); do
        timeout 5 munge -n </dev/null 2>/dev/null | timeout 5 unmunge >/dev/null 2>&1 && break
        sleep 0.2
    done
    timeout 5 munge -n </dev/null | timeout 5 unmunge >/dev/null || fail "munged did not start: $(cat "$STATE/munged.out")"
fi
STARTED=yes
slurmctld -D -c >"$STATE/slurmctld.out" 2>&1 &
echo $! >"$STATE/slurmctld.pid"
slurmd -D -N "$NODE" >"$STATE/slurmd.out" 2>&1 &
echo $! >"$STATE/slurmd.pid"
state=""
for _ in $(seq 120); do  # at most 60 s
    state="$(timeout 5 sinfo -h -n "$NODE" -o %t 2>/dev/null || true)"
    [[ "$state" == idle ]] && break
    sleep 0.5
done
[[ "$state" == idle ]] || fail "node $NODE is '${state:-unreachable}', not idle, after 60 s"
say "one-node cluster up: node $NODE ($CPUS CPUs, $MEM_MB MB), partition ci"

# ---- (d, e) the runs: the same targets locally and through SLURM, and a job that fails on SLURM ---------------------
copy_workflow() {  # like tests/conftest.py, plus the library: the jobs import the copy beside the Snakefile
    mkdir -p "$1"
    cp "$REPO/Snakefile" "$1/"
    cp -r "$REPO/workflow" "$REPO/scripts" "$REPO/maxmargin" "$1/"
    ln -s workflow/profiles "$1/profiles"  # the workflow profile, found next to the Snakefile as in the repo
    find "$1" -name __pycache__ -prune -exec rm -rf {} +
}
export PATH="$REPO/.venv/bin:$PATH"  # jobs get this environment (sbatch --export=ALL): the same .venv
export VIRTUAL_ENV="$REPO/.venv"
# The shipped profile plus the one option this cluster needs: it has no accounting database, so job status through
# squeue (with the plugin's sacct default, Snakemake would wait forever; the Snakefile stops such a run at once). (It
# has no accounts either, so the plugin warns "Unable to guess SLURM account" after `sacct: invalid option -- '1'`.)
SLURM_CI=(--slurm-status-command squeue)

run_bg() {  # run_bg NAME DIR CMD...: CMD in DIR, output in $WORK/NAME.log; `exec` makes $! timeout's own pid.
    local name="$1" dir="$2"  # `timeout 300` exits 124 when it had to stop a run: a hang
    shift 2
    (cd "$dir" && exec timeout -k 15 300 "$@") >"$WORK/$name.log" 2>&1 &
    PIDS[$name]=$!
}
show() { echo "---- last lines of $WORK/$1.log"; tail -n "$2" "$WORK/$1.log"; }
submitted_rules() {  # rule (or group) of each job a run submitted, from its SLURM log path
    # .snakemake/slurm_logs/rule_<rule>/... or .snakemake/slurm_logs/group_<group>_<its rules>/...
    grep 'has been submitted with SLURM jobid' "$WORK/$1.log" | grep -o 'slurm_logs/[a-z]*_[A-Za-z0-9_]*' \
        | sed -E 's#slurm_logs/rule_##; s#slurm_logs/group_.*_(census_trials|census_budget_trials|census_grid_cell)$#group:\1#' \
        || true
}
count_rules() { sort | uniq -c | awk '{printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1}'; }

# Only real compute goes to SLURM: a job of seconds (plot, gather, table, claims) costs more in submission and polling
# than it runs, so those rules are `localrule: True` and run inside the Snakemake process on the login node.
# Grouped jobs (the site profile's `groups`, `group:<its rule>` here) hold compute rules only: the census jobs.
COMPUTE_RULES=" census_trials census_budget_trials census_grid_cell regpath_instance lemma1_table basin_tables vit_train vit_baseline vit_pilot_run vit_recipe_train vit_probe vit_probe_images vit_decisive_ray vit_decisive_gd group:census_trials group:census_budget_trials group:census_grid_cell "
slurm_run() {  # slurm_run NAME DIR CONFIG TARGET...: TARGETS through the profile in DIR with CONFIG (a file, or
    local name="$1" dir="$2" config=() rc=0 start end rules  # `default`: the shipped config), timed; checks what
    [[ "$3" == default ]] || config=(--configfile "$3")     # was submitted. $RUN_ARGS: more options for this run
    read -r -a extra <<<"${RUN_ARGS:-}"
    config+=("${extra[@]}")
    shift 3
    say "SLURM run $name: snakemake --profile workflow/profiles/slurm ${SLURM_CI[*]} ${config[*]} $*"
    start=$EPOCHREALTIME
    run_bg "$name" "$dir" "$SNAKEMAKE" --profile workflow/profiles/slurm "${SLURM_CI[@]}" "${config[@]}" -- "$@"
    wait "${PIDS[$name]}" || rc=$?
    unset "PIDS[$name]"
    end=$EPOCHREALTIME
    rules="$(submitted_rules "$name")"
    echo "slurm_wall_s=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", b - a}') run=$name" \
        "submitted=$(grep -c . <<<"$rules") ($(count_rules <<<"$rules"))" \
        "local=$(( $(grep -cE '^[0-9:]{8} start ' "$WORK/$name.log") - $(grep -c . <<<"$rules") ))" \
        "load=\"$(cut -d' ' -f1-3 /proc/loadavg)\""
    if [[ $rc != 0 ]]; then
        show "$name" 60
        [[ $rc != 124 ]] || fail "the SLURM run $name did not finish within 300 s"
        fail "the SLURM run $name failed (exit $rc)"
    fi
    [[ -n "$rules" ]] || fail "the SLURM run $name submitted no job: its targets need a compute rule"
    local rule
    for rule in $(sort -u <<<"$rules"); do
        [[ "$COMPUTE_RULES" == *" $rule "* ]] \
            || fail "run $name submitted rule $rule to SLURM, where only $(xargs <<<"$COMPUTE_RULES") belong" \
                "(mark it localrule)"
    done
}

copy_workflow "$WORK/local"
copy_workflow "$WORK/slurm"
copy_workflow "$WORK/user"  # the default config's runs: their tables are not compared
mkdir -p "$WORK/failing"
printf '%s\n' 'rule fails_on_purpose:' '    output:' '        "never.txt",' '    shell:' \
    "        \"echo 'failing on purpose' >&2; exit 3\"" >"$WORK/failing/Snakefile"
VIT_TABLE="$(cd "$WORK/local" && "$REPO/.venv/bin/python" -c \
    "import yaml; print(yaml.safe_load(open('$CI_CONFIG'))['results'])")/tables/vit_metrics.csv"
# The runs: (1) every target locally, for the reference tables, beside a job that fails on SLURM; then through SLURM,
# each alone so that each wall time is its own: (2) fig9 (the census; target: within 60 s), (3) the regularization
# paths and Lemma 1, (4) one small vit_train (its CPU request, the rule's threads, must fit the node).
say "local run:   snakemake --cores 2 --configfile $CI_CONFIG fig9 regpath lemma1 $VIT_TABLE"
run_bg local "$WORK/local" "$SNAKEMAKE" --cores 2 --configfile "$CI_CONFIG" -- fig9 regpath lemma1 "$VIT_TABLE"
say "failing job: a rule that exits 3, through the same profile: snakemake must exit non-zero"
run_bg failing "$WORK/failing" "$SNAKEMAKE" --profile "$REPO/workflow/profiles/slurm" "${SLURM_CI[@]}" never.txt
declare -A RC=()
for name in local failing; do
    RC[$name]=0
    wait "${PIDS[$name]}" || RC[$name]=$?
    unset "PIDS[$name]"
done
[[ ${RC[local]} == 0 ]] || { show local 40; fail "the local run failed (exit ${RC[local]})"; }
slurm_run census "$WORK/slurm" "$CI_CONFIG" fig9
slurm_run regpath "$WORK/slurm" "$CI_CONFIG" regpath lemma1
slurm_run vit "$WORK/slurm" "$CI_CONFIG" "$VIT_TABLE"
# The silent hang: the shipped profile alone (status through sacct) on this cluster without accounting must stop at
# once with the fix, not wait forever after the jobs end
say "no status command: snakemake --profile workflow/profiles/slurm fig9 (must stop before submitting)"
run_bg no-status "$WORK/user" "$SNAKEMAKE" --profile workflow/profiles/slurm fig9
rc=0
wait "${PIDS[no-status]}" || rc=$?
unset "PIDS[no-status]"
[[ $rc != 0 && $rc != 124 ]] || { show no-status 30; fail "without --slurm-status-command squeue the run did not stop"; }
grep -q -- "--slurm-status-command squeue" "$WORK/no-status.log" || { show no-status 30; fail "no fix named"; }
! grep -q 'has been submitted with SLURM jobid' "$WORK/no-status.log" || fail "it submitted jobs before stopping"
say "no status command: stopped at the start (exit $rc), naming --slurm-status-command squeue"
# What a user runs: fig9 on the default config (target: at most 45 s), and the census grid as a few grouped jobs (CI's
# config has 12 cells of 10 trials, not 150 of 100: groups of 6 here instead of the profile's 30, so 2 groups)
slurm_run fig9-default "$WORK/user" default fig9
RUN_ARGS="--group-components census_grid=6" slurm_run census_grid "$WORK/user" "$CI_CONFIG" census_grid
grid_jobs="$(submitted_rules census_grid | grep -c . || true)"
[[ "$grid_jobs" == 2 ]] || fail "census_grid went to SLURM as $grid_jobs jobs, not as 2 groups of 6 cells"

# ---- (d) the tables of both runs, byte for byte (the ViT's wall-clock columns aside) --------------------------------
(cd "$WORK/local" && find results -path '*/tables/*.csv' | sort) >"$WORK/local.tables"
(cd "$WORK/slurm" && find results -path '*/tables/*.csv' | sort) >"$WORK/slurm.tables"
[[ -s "$WORK/local.tables" ]] || fail "the local run wrote no table"
diff "$WORK/local.tables" "$WORK/slurm.tables" >/dev/null \
    || fail "different tables: $(diff "$WORK/local.tables" "$WORK/slurm.tables" | grep '^[<>]' | tr '\n' ' ')"
while read -r table; do
    if [[ "$table" == "$VIT_TABLE" ]]; then
        "$REPO/.venv/bin/python" -c "import pandas as pd, sys
clock = ['train_seconds', 'epoch_seconds']
a, b = (pd.read_csv(f).drop(columns=clock, errors='ignore') for f in sys.argv[1:])
sys.exit(0 if a.equals(b) else 1)" "$WORK/local/$table" "$WORK/slurm/$table" \
            || fail "$table differs between the local and the SLURM run (wall-clock columns aside)"
    else
        cmp "$WORK/local/$table" "$WORK/slurm/$table" || fail "$table differs between the local and the SLURM run"
    fi
done <"$WORK/local.tables"
n_tables="$(wc -l <"$WORK/local.tables")"
n_jobs="$(cat "$WORK"/{census,regpath,vit}.log | grep -c 'has been submitted with SLURM jobid' || true)"
# slurm-keep-successful-logs in the profile: every job's SLURM log stays
n_logs="$(find "$WORK/slurm/.snakemake/slurm_logs" -name '*.log' | wc -l)"
[[ "$n_logs" == "$n_jobs" ]] || fail "$n_jobs jobs went to SLURM, but .snakemake/slurm_logs holds $n_logs SLURM logs"
say "SLURM runs: $n_jobs jobs through sbatch, each SLURM log kept; $n_tables tables identical to the local run's"

# ---- (e) the failing job failed the run, also after the profile's retry -----------------------------------------------
[[ ${RC[failing]} != 124 ]] || { show failing 40; fail "a failing SLURM job left Snakemake hanging (killed after 300 s)"; }
[[ ${RC[failing]} != 0 ]] || { show failing 40; fail "a failing SLURM job was reported as a success"; }
grep -q "Error in rule fails_on_purpose" "$WORK/failing.log" \
    || { show failing 40; fail "snakemake exited ${RC[failing]} without reporting the failed rule"; }
attempts="$(grep -c 'has been submitted with SLURM jobid' "$WORK/failing.log" || true)"
grep -rqs "failing on purpose" "$WORK/failing/.snakemake/slurm_logs" \
    || fail "the failed job's SLURM log under .snakemake/slurm_logs does not hold its stderr"
say "failing job: snakemake exit ${RC[failing]} after $attempts submissions; its SLURM log keeps its stderr"

say "PASS: $n_jobs SLURM jobs (compute rules only), $n_tables tables identical to a local run's, a failing job fails" \
    "the run"
