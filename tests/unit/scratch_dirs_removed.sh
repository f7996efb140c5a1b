#!/usr/bin/env bash
# A unit-test process whose tests pass leaves nothing under the temp directory (tests/unit/scratch_dir.h): each of
# make test's ~600 processes used to leave its /tmp/replica_test_<pid> behind, megabytes each.
#   scratch_dirs_removed.sh UNIT_TESTS
set -euo pipefail
unit_tests=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A test that writes into its process's scratch directory (core_npy/magic.npy).
TMPDIR=$tmp "$unit_tests" --gtest_filter=NpyHeader.AFileOfOnlyTheMagicIsTruncatedNotUnknown --gtest_brief=1
left=$(cd "$tmp" && find . -mindepth 1)
if [ -n "$left" ]; then
  echo "left behind under TMPDIR after the test process exited:" >&2
  echo "$left" >&2
  exit 1
fi
echo "nothing left under TMPDIR"
