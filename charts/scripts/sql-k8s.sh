#!/usr/bin/env bash
# spark-sql in the cluster's toolbox pod, through the metastore (`make sql-k8s`): interactive
# on a terminal, else the SQL on stdin, printed with a header row.
#
#   KC="<kubectl with context and namespace>" sql-k8s.sh [< file.sql]
set -euo pipefail

: "${KC:?set KC to the kubectl command line (\$(KC) of charts/k8s.mk)}"
read -r -a kc <<<"$KC"

if [ -t 0 ]; then
  exec "${kc[@]}" exec -it deploy/logberg-toolbox -- spark-sql
else
  exec "${kc[@]}" exec -i deploy/logberg-toolbox -- spark-sql -S --hiveconf hive.cli.print.header=true -f /dev/stdin
fi
