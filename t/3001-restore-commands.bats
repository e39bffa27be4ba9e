#!/usr/bin/env bats
load restore_helper
