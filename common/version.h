#ifndef WS_VERSION_H
#define WS_VERSION_H
#define WSTRACE_VERSION        "0.1.0"
#define WSTRACE_SCHEMA_VERSION 2
#endif
