#!/usr/bin/env bash
# Prints the processor as the benchmark records name it: its model name, family and model from
# /proc/cpuinfo (AMD's family 25 is Zen 3 and 4, 26 Zen 5), e.g. "AMD EPYC f26m2". The same
# code's times differ by a factor of two between two processors of this kind of machine.
awk -F': ' '/^model name/ {n=$2} /^cpu family/ {f=$2} /^model\t/ {m=$2} END {print n " f" f "m" m}' /proc/cpuinfo
