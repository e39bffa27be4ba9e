#include "tool.h"
int tool_errors(int argc, char **argv) { (void)argc; (void)argv; return 2; }
