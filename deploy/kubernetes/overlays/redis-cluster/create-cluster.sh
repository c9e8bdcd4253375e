#!/bin/sh
# Joins the nodes named in $REDIS_NODES ("host:port host:port host:port") into one Redis Cluster
# of masters, once: a cluster that already covers its slots is left alone, so the Job may run
# again. test/deploy/kubernetes-create-cluster.test.ts runs this very file against local redis-servers.
set -eu

: "${REDIS_NODES:?REDIS_NODES must list the nodes, host:port separated by spaces}"
DEADLINE_S="${CREATE_DEADLINE_S:-300}"
started=$(date +%s)

host_of() { echo "${1%:*}"; }
port_of() { echo "${1##*:}"; }
overdue() { [ $(($(date +%s) - started)) -ge "$DEADLINE_S" ]; }

for node in $REDIS_NODES; do
  until redis-cli -h "$(host_of "$node")" -p "$(port_of "$node")" ping 2>/dev/null | grep -q PONG; do
    if overdue; then
      echo "redis node $node never answered PING within ${DEADLINE_S}s" >&2
      exit 1
    fi
    sleep 2
  done
done

first=${REDIS_NODES%% *}
cluster_ok() {
  redis-cli -h "$(host_of "$first")" -p "$(port_of "$first")" cluster info | grep -q '^cluster_state:ok'
}

if cluster_ok; then
  echo "the cluster already covers every slot; nothing to do"
  exit 0
fi

# shellcheck disable=SC2086 # one argument per node
redis-cli --cluster create $REDIS_NODES --cluster-replicas 0 --cluster-yes

until cluster_ok; do
  if overdue; then
    echo "the cluster did not reach cluster_state:ok within ${DEADLINE_S}s" >&2
    exit 1
  fi
  sleep 1
done
echo "cluster created: $REDIS_NODES"
