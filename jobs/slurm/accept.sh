#!/usr/bin/env bash
# The acceptance of a fleet in one command: configs/acceptance.toml on N servers in one Slurm job, then one
# verdict, PASS, WARN or FAIL, per node, GPU and link, and the nodes to take out. It submits two jobs and
# returns (or waits, with --wait):
#   1. jobs/slurm/multi-node.sbatch CONFIG on N nodes (a rank per GPU granted, unless --ntasks-per-node)
#   2. the verdict, once job 1 has ended (afterany: also if it failed): `gpuscale report RESULT --verdict`
#      (with --expect FILE: judged by those limits) into results/accept-<JOBID of job 1>.verdict, then the
#      nodes to take out as `--format slurm` prints them; `--format json` into results/accept-<JOBID>.json
#
#   jobs/slurm/accept.sh --nodes N [options] [-- gpuscale run options...]
#   jobs/slurm/accept.sh --nodes 4 --wait
#   jobs/slurm/accept.sh --nodes 4 --expect expect.toml --wait
#   jobs/slurm/accept.sh --nodes 2 --sbatch --account=proj --sbatch --partition=gpu --sbatch --time=01:00:00
#   jobs/slurm/accept.sh --nodes 2 --cpu --ntasks-per-node 2 --config my-cpu.toml --wait
#   jobs/slurm/accept.sh --nodes 64 --wait -- --time-budget 1800
#
# Options:
#   -N, --nodes N            servers to accept (required; 1 or more): on 1 node the cases between servers
#                            (inter-node collectives, the node-pair sweep) are skipped, and the verdict says so
#   --config FILE            the config to run (default: configs/acceptance.toml beside these scripts)
#   --expect FILE            judge by the limits of FILE (`gpuscale baseline` of 3 or more runs of the same
#                            config on as many nodes and ranks) in place of the config's [experiment.expect]
#   --ntasks-per-node T      ranks per server (default: multi-node.sbatch's, one per GPU Slurm granted)
#   --cpu                    no GPUs: sbatch --gpus-per-node=0, for a config whose backend runs on the CPU
#   --sbatch OPTION          one more sbatch option for both jobs (repeatable), e.g.
#                            --sbatch --account=proj --sbatch --partition=gpu --sbatch --time=01:00:00
#   --wait                   wait for the verdict (asking Slurm after 5 s, then after twice as long each
#                            time, at most every 60 s), print it, exit with its exit code
#   -h, --help
# After --, options for `gpuscale run` (e.g. --time-budget 1800, for a node-pair sweep of many nodes);
# -o is refused: the result is named by job id (results/<config>-job<JOBID>-<time>.h5).
# Run it from the directory that is to hold results/ and the logs (gpuscale-<JOBID>.out of each job): both
# jobs work there. The binary is found as the job scripts find it ($GPUSCALE, the installed one, PATH,
# build/src/gpuscale here or in the checkout), before anything is submitted, and given to the jobs. A
# site's settings are read first (jobs/slurm/site.sh or $GPUSCALE_SITE; see site.sh.example).
# The verdict file starts with a line naming both jobs and how the run ended, then the result file and the
# limits used, the verdict table (`verdict: PASS|WARN|FAIL (...)`, the parts that warn or fail with their
# reasons, the passing ones in a line per kind, notes on what was not judged), then the nodes to take out
# (a hostlist for sbatch --exclude and an scontrol drain line per node, for an operator to run) or
# "no node to take out". Where the run left no result file, or one that cannot be judged (it did not
# complete, no case ran), it says "no verdict", why, and the end of the run's log.
# Exit code: 0 submitted, 2 bad usage or sbatch refused; with --wait the verdict's: 0 pass or warn, 1 fail,
# 2 no verdict (no result file, a run that did not complete, or the verdict job did not end normally).
set -euo pipefail
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
  sed -n '2,/^[^#]/{/^#SBATCH/d;/^#/{s/^# \{0,1\}//;p}}' "$0"
  exit 0
fi
script=accept.sh
# Slurm runs a copy of a batch script from its spool folder, so $0 may not say where the checkout is;
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
# shellcheck source-path=SCRIPTDIR/.. source=lib.sh disable=SC1091  # followed with shellcheck -x
. "$checkout/jobs/lib.sh"
here=$checkout/jobs/slurm

# One field of a job as scontrol shows it ("" where not known).
job_field() {  # job_field JOBID FIELD
  scontrol show job -o "$1" 2>/dev/null | grep -o " $2=[^ ]*" | head -n 1 | cut -d= -f2- || true
}

# Text as a JSON string (quotes, backslashes escaped; control characters dropped).
json_string() {
  local t=${1//\\/\\\\}
  t=${t//\"/\\\"}
  printf '"%s"' "$(tr -d '\000-\037' <<<"$t")"
}

# The end of the run's log, indented, for a verdict that could not be reached.
run_log_tail() {  # run_log_tail RUN_JOB
  if [ -f "gpuscale-$1.out" ]; then
    echo "the end of the run's log gpuscale-$1.out:"
    tail -n 15 "gpuscale-$1.out" | sed 's/^/  /'
  else
    echo "the run's log gpuscale-$1.out is not in $PWD (an sbatch --output elsewhere?)"
  fi
}

# The verdict job's work (accept.sh --judge RUN_JOB [EXPECT], in the jobs' working directory): the verdict text on
# stdout, the JSON into $json; returns the verdict's exit code (0 pass or warn, 1 fail, 2 none).
judge() {
  local run=$1 expect=${2:-} f rc=0 drain
  local -a limits=()
  [ -z "$expect" ] || limits=(--expect "$expect")
  local state ended="scontrol does not know how it ended"
  state=$(job_field "$run" JobState)
  [ -z "$state" ] || ended="ended $state, exit code $(job_field "$run" ExitCode)"
  echo "=== gpuscale acceptance: the run, job $run ($ended), judged in job ${SLURM_JOB_ID:-(none)}" \
       "on $(date '+%F %T %z')"
  f=$(job_result_file "$run")
  if [ -z "$f" ]; then
    local why="job $run left no result file (results/*-job$run-*.h5 in $PWD)"
    echo "no verdict: $why"
    run_log_tail "$run"
    printf '{"file": null, "overall": {"severity": "NONE", "reasons": [%s]}}\n' "$(json_string "$why")" >"$json"
    return 2
  fi
  echo "result: $f"
  if [ -n "$expect" ]; then echo "limits: $expect"; else echo "limits: the config's [experiment.expect]"; fi
  local table why
  table=$("$gpuscale" report "$f" --verdict "${limits[@]}" 2>&1) || rc=$?
  echo "$table"
  why=$("$gpuscale" report "$f" --verdict --format json "${limits[@]}" 2>&1 >"$json") || true
  if [ ! -s "$json" ]; then  # refused before it judged (e.g. a limits file that holds none of its cases)
    printf '{"file": %s, "overall": {"severity": "NONE", "reasons": [%s]}}\n' "$(json_string "$f")" \
           "$(json_string "${why:-gpuscale report --verdict --format json printed nothing}")" >"$json"
  fi
  [ "$rc" != 2 ] || [[ $table == *"no verdict"* ]] || echo "no verdict: gpuscale report --verdict exited 2 (above)"
  case $rc in
    0) echo "no node to take out";;  # pass or warn: no node failed
    1) drain=$("$gpuscale" report "$f" --verdict --format slurm "${limits[@]}" 2>&1) || true
       if [ -n "$drain" ] && [[ $drain != "# nothing to drain"* ]]; then printf 'nodes to take out (gpuscale report --verdict --format slurm):\n%s\n' "$drain"
       else echo "no node to take out"; fi;;
    2) run_log_tail "$run";;
    *) echo "no verdict: gpuscale report ended with exit code $rc"
       rc=2;;
  esac
  return "$rc"
}

if [ "${1:-}" = --judge ]; then
  [ $# -eq 2 ] || [ $# -eq 3 ] || die 2 "--judge RUN_JOB [EXPECT]"
  [[ $2 =~ ^[0-9_]+$ ]] || die 2 "--judge wants a job id, got '$2'"
  load_site job  # (it sets and clears a trap on ERR of its own)
  # A step that fails for a reason of its own is no verdict, never a FAIL of the fleet.
  trap 'echo "$script: error: the verdict of job $2 failed at line $LINENO" >&2; exit 2' ERR
  gpuscale=$(find_gpuscale)
  mkdir -p results
  base=results/accept-$2 json=results/accept-$2.json.tmp
  rc=0
  judge "$2" "${3:-}" >"$base.verdict.tmp" || rc=$?
  mv "$json" "$base.json"
  mv "$base.verdict.tmp" "$base.verdict"
  cat "$base.verdict"
  echo "verdict: $PWD/$base.verdict, JSON: $PWD/$base.json"
  exit "$rc"
fi

nodes="" per_node="" cpu=0 wait=0 config="" expect="" sbatch_opts=()
while [ $# -gt 0 ]; do
  case $1 in
    -N|--nodes) [ $# -ge 2 ] || die 2 "$1 needs a number"; nodes=$2; shift 2;;
    --nodes=*) nodes=${1#*=}; shift;;
    --ntasks-per-node) [ $# -ge 2 ] || die 2 "$1 needs a number"; per_node=$2; shift 2;;
    --ntasks-per-node=*) per_node=${1#*=}; shift;;
    --config) [ $# -ge 2 ] || die 2 "--config needs a file"; config=$2; shift 2;;
    --config=*) config=${1#*=}; shift;;
    --expect) [ $# -ge 2 ] || die 2 "--expect needs a limits file (gpuscale baseline ... -o FILE)"; expect=$2; shift 2;;
    --expect=*) expect=${1#*=}; shift;;
    --cpu) cpu=1; shift;;
    --sbatch) [ $# -ge 2 ] || die 2 "--sbatch needs an sbatch option, e.g. --sbatch --partition=gpu"
              sbatch_opts+=("$2"); shift 2;;
    --sbatch=*) sbatch_opts+=("${1#*=}"); shift;;
    --wait) wait=1; shift;;
    --) shift; break;;
    -*) die 2 "unknown option $1 (see --help)";;
    *) die 2 "unexpected argument '$1': the config goes with --config, gpuscale run options after -- (see --help)";;
  esac
done
[ -n "$nodes" ] || die 2 "no --nodes given: how many servers to accept, e.g. --nodes 4 (see --help)"
# Numbers of at most 6 digits before bash compares them (past 2^63 the comparison itself fails).
{ [[ $nodes =~ ^[0-9]{1,6}$ ]] && [ "$nodes" -ge 1 ]; } || die 2 "--nodes wants 1 to 999999 servers, got '$nodes'"
[ -z "$per_node" ] || [[ $per_node =~ ^[1-9][0-9]{0,5}$ ]] ||
  die 2 "--ntasks-per-node wants a number from 1 to 999999, got '$per_node'"
config=$(find_config "${config:-$checkout/configs/acceptance.toml}")
config=$(realpath "$config")
if [ -n "$expect" ]; then
  [ -f "$expect" ] || die 2 "--expect: limits file not found: $expect (working directory $PWD)"
  grep -q '^[[:space:]]*gpuscale_limits[[:space:]]*=' "$expect" ||
    die 2 "--expect: $expect is not a limits file (no gpuscale_limits line; 'gpuscale baseline RUN.h5... -o FILE'" \
          "writes one)"
  expect=$(realpath "$expect")
fi
for a in "$@"; do
  case $a in
    -o|-o*|--output|--output=*) die 2 "$a: the acceptance names its result file by job id; leave -o out";;
  esac
done
load_site submit
GPUSCALE=$(find_gpuscale)
export GPUSCALE
command -v sbatch >/dev/null || die 2 "sbatch not found: run the acceptance on a Slurm login node"

common=(--parsable "${sbatch_opts[@]}")
run_opts=("${common[@]}" --job-name=gpuscale-accept --nodes="$nodes")
[ -z "$per_node" ] || run_opts+=(--ntasks-per-node="$per_node")
[ "$cpu" = 0 ] || run_opts+=(--gpus-per-node=0)
sub=$(sbatch "${run_opts[@]}" "$here/multi-node.sbatch" "$config" "$@") || die 2 "sbatch refused the run (see above)"
run=${sub%%;*}
judge_cmd="exec bash $(printf %q "$here/accept.sh") --judge $run"
[ -z "$expect" ] || judge_cmd+=" $(printf %q "$expect")"
if ! sub=$(sbatch "${common[@]}" --job-name=gpuscale-verdict --nodes=1 --ntasks=1 --output=gpuscale-%j.out \
             --open-mode=append --no-requeue --dependency=afterany:"$run" --wrap="$judge_cmd"); then
  scancel "$run" || true
  die 2 "sbatch refused the verdict job (see above); cancelled the run, job $run"
fi
verdict=${sub%%;*}
echo "run:     job $run on $nodes node(s) (log gpuscale-$run.out, results/$(basename "${config%.*}")-job$run-*.h5)"
echo "judging: job $verdict once job $run has ended (log gpuscale-$verdict.out, results/accept-$run.verdict and .json)"
[ "$wait" = 1 ] || exit 0

job_state="" job_exit=""  # wait_for_job's answer
wait_for_job "$verdict" || die 2 "scontrol does not know job $verdict any more; see gpuscale-$verdict.out"
if [ -f "results/accept-$run.verdict" ]; then
  cat "results/accept-$run.verdict"
else
  echo "$script: the verdict job $verdict wrote no results/accept-$run.verdict; its log gpuscale-$verdict.out:" >&2
  cat "gpuscale-$verdict.out" >&2 2>/dev/null || true
fi
# The verdict job exits with the verdict's code; one that ended otherwise (cancelled, timed out, no file) gave none.
case $job_state:${job_exit:-} in
  COMPLETED:*) [ -f "results/accept-$run.verdict" ] && exit 0;;
  FAILED:1|FAILED:2) [ -f "results/accept-$run.verdict" ] && exit "$job_exit";;
esac
echo "$script: no verdict: the verdict job $verdict ended $job_state, exit code ${job_exit:-unknown}" >&2
exit 2
