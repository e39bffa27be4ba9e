/*
 * qwen.h: libqwen, the internal library of the qwen-serve toolkit.
 *
 * What more than one program needs: NDJSON JSON-RPC framing, the error
 * catalog, budgets, trace context, clocks and logging.  The library never
 * exits and never prints (logging aside, which writes where the program
 * told it to); it returns errors.
 */
#ifndef QWEN_H
#define QWEN_H

#include "budget.h"
#include "clock.h"
#include "errors.h"
#include "log.h"
#include "paths.h"
#include "rpc-frame.h"
#include "rpc-pending.h"
#include "trace.h"

#endif
