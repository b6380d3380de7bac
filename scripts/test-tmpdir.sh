#!/usr/bin/env bash
# Prints the folder `make test` gives the tests to write in (AGE2048_TEST_TMPDIR, TMPDIR): one
# of /dev/shm where that is a tmpfs with room for the suite's solves (about 4 GiB, asked 8),
# else nothing, and the tests write under the build cache as `cargo test` does. The suite
# creates and deletes tens of thousands of files; on ext4 each new file's inode is found by
# scanning past those deleted in the last 30 s, seconds of system time a solve
# (reports/bench/fresh.md).
set -u
dir=/dev/shm
[ "$(stat -f -c %T "$dir" 2>/dev/null)" = tmpfs ] || exit 0
[ -w "$dir" ] || exit 0
free_kb=$(df -Pk "$dir" 2>/dev/null | awk 'NR == 2 { print $4 }')
[ -n "$free_kb" ] && [ "$free_kb" -ge $((8 * 1024 * 1024)) ] || exit 0
echo "$dir/age2048-test-$(id -u)"
