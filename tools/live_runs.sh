#!/usr/bin/env bash
# Is a Snakemake run going in this directory? Prints one line and exits:
#   0 "none"                      no Snakemake process here (a Snakemake lock left here is stale)
#   1 "live PID (COMMAND), ..."   Snakemake processes whose working directory is this one
#   2 "unknown PID (COMMAND), ..." Snakemake processes whose working directory cannot be read (another user's): the
#                                 caller cannot tell, and must not guess
# A Snakemake process is one whose command line runs Snakemake (`snakemake`, `.venv/bin/snakemake`, `python -m
# snakemake`) or one of its jobs' scripts (`.snakemake/scripts/`); any other process (an idle python, a Jupyter
# kernel) is not a run. The caller's own ancestors (make, its shell) are not counted. Linux /proc only (elsewhere:
# "unknown /proc"); LIVE_RUNS_PROC points it at another process table (tests/test_locks.py).
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

# Whether the arguments (a command line, word by word) run Snakemake or a Snakemake job's script.
runs_snakemake() {
    local word previous=""
    for word in "$@"; do
        if [[ "${word##*/}" == snakemake || ( "$previous" == -m && ( "$word" == snakemake || "$word" == snakemake.* ) )
              || "$word" == *.snakemake/scripts/* ]]; then
            return 0
        fi
        previous=$word
    done
    return 1
}

live=() unknown=()
for p in "$proc"/[0-9]*; do
    pid=${p##*/}
    [[ "$pid" == "$$" || "$ancestors" == *" $pid "* ]] && continue
    mapfile -d '' -t argv 2>/dev/null <"$p/cmdline" || continue
    (( ${#argv[@]} )) && runs_snakemake "${argv[@]}" || continue
    named="$pid (${argv[*]:0:8})"
    if cwd=$(readlink "$p/cwd" 2>/dev/null); then
        [[ "$cwd" == "$here" ]] && live+=("$named")
    elif [[ -e "$p" ]]; then
        unknown+=("$named")
    fi
done
join() { local IFS=$'\x1f'; local text="$*"; echo "${text//$'\x1f'/, }"; }
if (( ${#live[@]} )); then echo "live $(join "${live[@]}")"; exit 1; fi
if (( ${#unknown[@]} )); then echo "unknown $(join "${unknown[@]}")"; exit 2; fi
echo "none"
