/* The one list of wstrace subcommands: help, dispatch and completion read it. */
#include "commands.h"

#include <stdarg.h>
#include <stdio.h>

const struct ws_command ws_commands[] = {
    /* name, function, flags, summary */
    {"record", cmd_record, 0, "run a program under the tracer and write its SQLite trace"},
    {"collect", cmd_collect, 0, "recover the trace of a crashed or killed process from its spool"},
    {"summary", cmd_summary, WS_CMD_TRACE_INPUT, "runs, nodes, peak live bytes, top nodes, coverage of a trace"},
    {"lifetimes", cmd_lifetimes, WS_CMD_TRACE_INPUT, "classify allocations and their lifetimes in node steps"},
    {"resolve", cmd_resolve, WS_CMD_TRACE_INPUT, "workspace per node: max(profile, estimator) or fallback"},
    {"verify", cmd_verify, WS_CMD_TRACE_INPUT, "check Level-2 declarations against Level 1 and observed use"},
    {"plan", cmd_plan, WS_CMD_TRACE_INPUT, "static memory layout per shape key, or for a CSV problem"},
    {"report", cmd_report, WS_CMD_TRACE_INPUT, "compare two traces: peak bytes, allocation calls, nodes, parity"},
    {"export", cmd_export, WS_CMD_TRACE_INPUT, "write a trace as Chrome/Perfetto JSON or ONNX Runtime's node-stats file"},
    {"import", cmd_import, 0, "write a trace from an Nsight Systems export or a PyTorch memory snapshot"},
    {"merge", cmd_merge, 0, "merge the traces of several processes (ranks) into one"},
    {"view", cmd_view, WS_CMD_TRACE_INPUT, "write one self-contained HTML page to explore a trace's memory"},
    {"partition", cmd_partition, WS_CMD_TRACE_INPUT, "how many layers fit a memory budget; ORT's placement rules"},
};

const unsigned ws_command_count = sizeof(ws_commands) / sizeof(ws_commands[0]);

void ws_error(const char *fmt, ...)
{
    va_list ap;
    fputs("wstrace: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}
