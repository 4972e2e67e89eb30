#!/bin/bash
# logberg's own stop-connect-server.sh: the SparkConnect server pod's preStop hook. The
# server runs as the container's first process (start-connect-server.sh execs it); SIGTERM
# lets the JVM run its shutdown hooks (executors released, the gRPC server closed). The
# kubelet sends its own SIGTERM after this hook, so a server already gone is no error.
kill -TERM 1 2>/dev/null || true
