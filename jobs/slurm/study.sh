#!/usr/bin/env bash
# One config on 1 server and on N servers, then both results side by side: serial (the ranks of one
# server in turns), one server (1 node, all ranks at once) and across servers (N nodes). One command
# submits three Slurm jobs and returns (or waits, with --wait):
#   1. jobs/slurm/single-node.sbatch CONFIG on 1 node
#   2. jobs/slurm/multi-node.sbatch CONFIG on N nodes, once job 1 has ended (afterany: also if it failed;
#      the runs never share the servers' time)
#   3. the comparison, once both have ended: `gpuscale report` over the two result files
#
#   jobs/slurm/study.sh [options] CONFIG [gpuscale run options...]
#   jobs/slurm/study.sh configs/default.toml
#   jobs/slurm/study.sh --nodes 4 --wait configs/cross-server.toml
#   jobs/slurm/study.sh --sbatch --account=proj --sbatch --partition=gpu --sbatch --time=01:00:00 configs/default.toml
#   jobs/slurm/study.sh --cpu --ntasks-per-node 2 --sbatch --cpus-per-task=4 configs/default.toml
#
# Options:
#   -N, --nodes N            servers of the cross-server run (default 2)
#   --ntasks-per-node T      ranks per server, in both runs (default: the job scripts', one per GPU granted)
#   --cpu                    no GPUs: sbatch --gpus-per-node=0 (backend "auto" then runs on the CPU)
#   --sbatch OPTION          one more sbatch option for all three jobs (repeatable), e.g.
#                            --sbatch --account=proj --sbatch --partition=gpu --sbatch --qos=normal
#                            --sbatch --time=02:00:00 --sbatch --gpus-per-node=8
#   --wait                   wait for the comparison (asking Slurm after 5 s, then after twice as long
#                            each time, at most every 60 s), print it, exit with its exit code
#   -h, --help
# Run it from the directory that is to hold results/ and the logs: all three jobs work there. The
# binary is found as the job scripts find it ($GPUSCALE, the installed one when the scripts are
# installed, PATH, build/src/gpuscale in this directory or in the checkout), here, before anything is
# submitted, and given to the jobs as GPUSCALE.
# A site's settings are read first: jobs/slurm/site.sh where present, or the file $GPUSCALE_SITE names
# (SBATCH_ACCOUNT, SBATCH_PARTITION, SBATCH_QOS, SBATCH_TIMELIMIT there apply to all three jobs; see
# site.sh.example); the jobs read it again before they start the ranks.
# The results are named by job id (results/<config>-job<JOBID>-<time>.h5), so -o is refused.
# The comparison (log gpuscale-<JOBID of job 3>.out) prints each run's `gpuscale report` table, one
# after the other (1 node first), then both side by side (each case's median in each run, and its
# speedup over the 1-node serial run: serial, one server, across servers), and writes the rows of
# both as CSV, with a `file` column, to results/study-<JOBID of job 3>.csv. It exits 1 when a run
# left no result file.
# Exit code: 0 submitted (with --wait: the comparison's), 2 bad usage or nothing to run, 1 sbatch failed.
set -euo pipefail
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then sed -n '2,/^[^#]/{/^#SBATCH/d;/^#/{s/^# \{0,1\}//;p}}' "$0"; exit 0; fi
script=study.sh
# Slurm runs a copy of this script from its spool folder, so $0 does not say where the checkout is;
# the path it was submitted with does (scontrol; relative to the submission directory).
self=$0
if [ -n "${SLURM_JOB_ID:-}" ] && [ ! -f "$(dirname "$self")/../lib.sh" ]; then
  self=$(scontrol show job "$SLURM_JOB_ID" 2>/dev/null | sed -n 's/^ *Command=//p' | head -n 1) || true
  [ -f "$self" ] || self=${self%% *}  # newer Slurm may list the arguments too
  [[ $self == /* ]] || self=${SLURM_SUBMIT_DIR:-$PWD}/$self
fi
checkout=$(cd "$(dirname "$self")/../.." 2>/dev/null && pwd) || checkout=/nonexistent
if [ ! -f "$checkout/jobs/lib.sh" ]; then
  echo "$script: error: cannot find jobs/lib.sh of the gpuscale checkout this script belongs to ($self);" \
       "run the scripts where they lie in the checkout (a copy elsewhere cannot find it)" >&2
  exit 2
fi
# shellcheck source-path=SCRIPTDIR/.. source=lib.sh
. "$checkout/jobs/lib.sh"
here=$checkout/jobs/slurm

# The third job: study.sh --compare JOB_1NODE JOB_NNODES (in the jobs' working directory).
compare() {
  local files=() id f missing=0
  echo "=== gpuscale study: 1 node (job $1) vs $3 nodes (job $2), compared in job ${SLURM_JOB_ID:-(none)}" \
       "on $(date '+%F %T %z')"
  echo "serial: the 1-node run's serial rows (its ranks in turns); one server: its parallel rows;" \
       "across servers: the $3-node run's parallel rows"
  for id in "$1" "$2"; do
    f=$(job_result_file "$id")
    if [ -z "$f" ]; then
      echo "job $id left no result file (results/*-job$id-*.h5 in $PWD); see its log gpuscale-$id.out"
      missing=1
    else
      files+=("$f")
    fi
  done
  [ ${#files[@]} -gt 0 ] || return 1
  gpuscale=$(find_gpuscale)
  echo
  "$gpuscale" report "${files[@]}"
  local csv=results/study-${SLURM_JOB_ID:-$$}.csv
  "$gpuscale" report --format csv "${files[@]}" >"$csv"
  echo "all rows as CSV: $PWD/$csv"
  return $missing
}

if [ "${1:-}" = --compare ]; then
  [ $# -eq 4 ] || die 2 "--compare JOB_1NODE JOB_NNODES NODES"
  rc=0
  compare "$2" "$3" "$4" || rc=$?
  exit "$rc"
fi

nodes=2 per_node="" cpu=0 wait=0 sbatch_opts=()
while [ $# -gt 0 ]; do
  case $1 in
    -N|--nodes) [ $# -ge 2 ] || die 2 "$1 needs a number"; nodes=$2; shift 2;;
    --nodes=*) nodes=${1#*=}; shift;;
    --ntasks-per-node) [ $# -ge 2 ] || die 2 "$1 needs a number"; per_node=$2; shift 2;;
    --ntasks-per-node=*) per_node=${1#*=}; shift;;
    --cpu) cpu=1; shift;;
    --sbatch) [ $# -ge 2 ] || die 2 "--sbatch needs an sbatch option, e.g. --sbatch --partition=gpu"
              sbatch_opts+=("$2"); shift 2;;
    --sbatch=*) sbatch_opts+=("${1#*=}"); shift;;
    --wait) wait=1; shift;;
    --) shift; break;;
    -*) die 2 "unknown option $1 (see --help)";;
    *) break;;
  esac
done
# Numbers of at most 6 digits before bash compares them (past 2^63 the comparison itself fails).
{ [[ $nodes =~ ^[0-9]{1,6}$ ]] && [ "$nodes" -ge 2 ]; } || die 2 "--nodes wants 2 to 999999 servers, got '$nodes'"
[ -z "$per_node" ] || [[ $per_node =~ ^[1-9][0-9]{0,5}$ ]] ||
  die 2 "--ntasks-per-node wants a number from 1 to 999999, got '$per_node'"
[ $# -ge 1 ] || die 2 "no config given (usage: $script [options] CONFIG [gpuscale run options...]; --help)"
config=$(find_config "$1")
config=$(realpath "$config")
shift
for a in "$@"; do
  case $a in
    -o|-o*|--output|--output=*) die 2 "$a: the study names its result files by job id; leave -o out";;
  esac
done
load_site submit
GPUSCALE=$(find_gpuscale)
export GPUSCALE
command -v sbatch >/dev/null || die 2 "sbatch not found: run the study on a Slurm login node"

common=(--parsable "${sbatch_opts[@]}")
[ -z "$per_node" ] || common+=(--ntasks-per-node="$per_node")
[ "$cpu" = 0 ] || common+=(--gpus-per-node=0)
submitted=()
submit() {  # submit SBATCH-ARGS...: prints the job id; on a refusal cancels the jobs submitted before
  local out
  if ! out=$(sbatch "$@"); then
    if [ ${#submitted[@]} -gt 0 ]; then scancel "${submitted[@]}" || true; fi
    die 1 "sbatch $* failed${submitted[*]:+; cancelled job(s) ${submitted[*]}}"
  fi
  echo "${out%%;*}"
}
one=$(submit "${common[@]}" --nodes=1 "$here/single-node.sbatch" "$config" "$@")
submitted+=("$one")
many=$(submit "${common[@]}" --nodes="$nodes" --dependency=afterany:"$one" "$here/multi-node.sbatch" "$config" "$@")
submitted+=("$many")
cmp=$(submit --parsable "${sbatch_opts[@]}" --job-name=gpuscale-study --nodes=1 --ntasks=1 \
        --output=gpuscale-%j.out --open-mode=append --no-requeue --dependency=afterany:"$one":"$many" \
        --wrap="exec bash $(printf %q "$here/study.sh") --compare $one $many $nodes")
echo "1 node:   job $one (log gpuscale-$one.out)"
echo "$nodes nodes:  job $many (log gpuscale-$many.out), after job $one"
echo "compared: job $cmp (log gpuscale-$cmp.out, CSV results/study-$cmp.csv), after both"
[ "$wait" = 1 ] || exit 0

# Ask the controller with back-off (jobs/lib.sh: wait_for_job).
wait_for_job "$cmp" || die 1 "scontrol does not know job $cmp any more; see gpuscale-$cmp.out"
cat "gpuscale-$cmp.out" 2>/dev/null || echo "$script: the comparison's log gpuscale-$cmp.out is missing" >&2
[ "$job_state" = COMPLETED ] && exit 0
echo "$script: the comparison (job $cmp) ended $job_state, exit code ${job_exit:-unknown}" >&2
[ "${job_exit:-0}" != 0 ] && exit "$job_exit"
exit 1
