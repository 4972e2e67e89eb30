#!/usr/bin/env bash
# Run each ScheduledSparkApplication of a namespace once, now, and wait for it.
#
#   run-scheduled.sh NAMESPACE [NAME ...]
#
# Without names: every ScheduledSparkApplication in NAMESPACE, those whose name
# contains "ingest" first (analytics reads what ingest wrote). Each one is copied into
# a SparkApplication "<name>-run-<timestamp>" with the same spec.template, which is
# what the operator would create at the next scheduled time. Needs kubectl (with a
# kubeconfig for the cluster) and python3. TIMEOUT_SECONDS (default 3600) per job.
set -euo pipefail

ns=${1:?usage: run-scheduled.sh NAMESPACE [NAME ...]}
shift
timeout=${TIMEOUT_SECONDS:-3600}

if (($# == 0)); then
  mapfile -t all < <(kubectl get scheduledsparkapplications.sparkoperator.k8s.io -n "$ns" \
    -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
  if ((${#all[@]} == 0)); then
    echo "no ScheduledSparkApplication in namespace $ns (is the logberg release installed?)" >&2
    exit 1
  fi
  set -- $(printf '%s\n' "${all[@]}" | grep ingest || true) \
         $(printf '%s\n' "${all[@]}" | grep -v ingest || true)
fi

for name in "$@"; do
  run="${name:0:40}-run-$(date +%s)"
  echo "==> $ns/$name -> SparkApplication $run"
  kubectl get scheduledsparkapplications.sparkoperator.k8s.io "$name" -n "$ns" -o json |
    python3 -c '
import json, sys
src = json.load(sys.stdin)
print(json.dumps({
    "apiVersion": "sparkoperator.k8s.io/v1beta2",
    "kind": "SparkApplication",
    "metadata": {
        "name": sys.argv[1],
        "namespace": src["metadata"]["namespace"],
        "labels": {"logberg.io/triggered-from": src["metadata"]["name"]},
    },
    "spec": src["spec"]["template"],
}))' "$run" | kubectl create -f -

  deadline=$((SECONDS + timeout))
  state=""
  while ((SECONDS < deadline)); do
    state=$(kubectl get sparkapplications.sparkoperator.k8s.io "$run" -n "$ns" \
      -o jsonpath='{.status.applicationState.state}' 2>/dev/null || true)
    case "$state" in
      COMPLETED) echo "    $run COMPLETED"; break ;;
      FAILED | SUBMISSION_FAILED)
        echo "    $run $state; driver log: kubectl logs -n $ns ${run}-driver" >&2
        kubectl get sparkapplications.sparkoperator.k8s.io "$run" -n "$ns" \
          -o jsonpath='{.status.applicationState.errorMessage}{"\n"}' >&2 || true
        exit 1 ;;
    esac
    sleep 10
  done
  if [[ "$state" != COMPLETED ]]; then
    echo "    $run did not finish within ${timeout}s (last state: ${state:-none})" >&2
    exit 1
  fi
done
