#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Help as people ask for it: "help", "help CMD", "CMD --help", one page a
# command, on standard output with exit 0; every command has one.

load test_helper

@test "qwen-restore help and --help: the usage on stdout, exit 0, naming help COMMAND" {
	run --separate-stderr qwen-restore help
	[ "$status" -eq 0 ]
	[[ "$output" == "usage: qwen-restore "* ]]
	[[ "$output" == *"qwen-restore help COMMAND"* ]]
	[ -z "$stderr" ]
	run --separate-stderr qwen-restore --help
	[ "$status" -eq 0 ]
	[[ "$output" == "usage: qwen-restore "* ]]
}

@test "prompt --help and help prompt: the prompt command's own page" {
	run --separate-stderr qwen-restore prompt --help
	[ "$status" -eq 0 ]
	[[ "$output" == "usage: qwen-restore [options] prompt ID [TEXT|-]"* ]]
	[[ "$output" == *"stream the answer to standard output"* ]]
	local a=$output
	run qwen-restore help prompt
	[ "$status" -eq 0 ]
	[ "$output" = "$a" ]
}

@test "every command of the manual has its help page" {
	local n=0 cmd
	for cmd in $(sed -n 's/^\.It Cm \([a-z-]*\).*/\1/p' "$QWEN_TOP_SRCDIR/man/qwen-restore.1" | sort -u); do
		run qwen-restore help "$cmd"
		[ "$status" -eq 0 ]
		[[ "$output" == "usage: qwen-restore [options] $cmd"* ]]
		n=$((n + 1))
	done
	[ "$n" -ge 17 ]
}

@test "help of an unknown command: exit 2, one line" {
	run --separate-stderr qwen-restore help frobnicate
	[ "$status" -eq 2 ]
	[ "$stderr" = "qwen-restore: help: unknown command 'frobnicate'" ]
}
