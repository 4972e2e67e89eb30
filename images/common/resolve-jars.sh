#!/bin/sh
# resolve-jars.sh POM OUTDIR [-Dname=value ...]
#
# Copies the jars POM lists, with their runtime dependencies, into OUTDIR. Maven runs with
# --strict-checksums: every file it downloads is checked against the .sha1 that Maven
# Central publishes next to it, and the build fails on a mismatch. Maven itself is checked
# against MAVEN_SHA512 (jobs/logberg/versions.toml). Used only in image build stages
# (needs curl, sha512sum and a JRE); nothing here runs when a container starts.
set -eu

pom=$1
out=$2
shift 2
: "${MAVEN_VERSION:?MAVEN_VERSION (versions.toml [build].maven) is required}"
: "${MAVEN_SHA512:?MAVEN_SHA512 (versions.toml [build].maven_sha512) is required}"
: "${MAVEN_DEPENDENCY_PLUGIN:?MAVEN_DEPENDENCY_PLUGIN (versions.toml [build]) is required}"
central=${CENTRAL:-https://repo1.maven.org/maven2}

work=$(mktemp -d)
tarball="$work/apache-maven-$MAVEN_VERSION-bin.tar.gz"
curl -fsSL --retry 3 -o "$tarball" \
  "$central/org/apache/maven/apache-maven/$MAVEN_VERSION/apache-maven-$MAVEN_VERSION-bin.tar.gz"
echo "$MAVEN_SHA512  $tarball" | sha512sum -c --quiet -
tar -xzf "$tarball" -C "$work"

mkdir -p "$out"
"$work/apache-maven-$MAVEN_VERSION/bin/mvn" -B -q --strict-checksums \
  -Dmaven.repo.local="$work/repository" -f "$pom" \
  "org.apache.maven.plugins:maven-dependency-plugin:$MAVEN_DEPENDENCY_PLUGIN:copy-dependencies" \
  -DincludeScope=runtime -DoutputDirectory="$out" "$@"
rm -rf "$work"
echo "resolve-jars: $(find "$out" -type f | wc -l) files in $out"
