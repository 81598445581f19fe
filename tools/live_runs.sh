#!/usr/bin/env bash
# Is a Snakemake run going in this directory? Prints one line and exits:
#   0 "none"               no process that could be one (a Snakemake lock left here is stale)
#   1 "live <pids>"        processes that may be one: their working directory is this one and their command line
#                          names snakemake or a Python interpreter (`snakemake`, `python -m snakemake`, a job's script)
#   2 "unknown <pids>"     processes that may be one but whose working directory cannot be read (another user's):
#                          the caller cannot tell, and must not guess
# The caller's own ancestors (make, its shell) are not counted. Linux /proc only (elsewhere: "unknown /proc");
# LIVE_RUNS_PROC points it at another process table (tests/test_locks.py).
set -u
here=$(pwd -P)
proc=${LIVE_RUNS_PROC:-/proc}
[[ -d /proc/self ]] || { echo "unknown /proc"; exit 2; }
ancestors=" "
pid=$PPID
while [[ "$pid" =~ ^[0-9]+$ && "$pid" -gt 1 ]]; do
    ancestors+="$pid "
    pid=$(awk '/^PPid:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
done
live=() unknown=()
for p in "$proc"/[0-9]*; do
    pid=${p##*/}
    [[ "$pid" == "$$" || "$ancestors" == *" $pid "* ]] && continue
    cmd=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
    [[ "$cmd" =~ (^|[/ ])(snakemake|python[0-9.]*)( |$) || "$cmd" == *snakemake* ]] || continue
    if cwd=$(readlink "$p/cwd" 2>/dev/null); then
        [[ "$cwd" == "$here" ]] && live+=("$pid")
    elif [[ -e "$p" ]]; then
        unknown+=("$pid")
    fi
done
if (( ${#live[@]} )); then echo "live ${live[*]}"; exit 1; fi
if (( ${#unknown[@]} )); then echo "unknown ${unknown[*]}"; exit 2; fi
echo "none"
