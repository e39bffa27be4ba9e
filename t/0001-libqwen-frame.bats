#!/usr/bin/env bats
load test_helper
@test "placeholder" { skip "not yet"; }
