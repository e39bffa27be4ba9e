#include "tool.h"
int tool_frame(int argc, char **argv) { (void)argc; (void)argv; return 2; }
