/* errors.h: placeholder until the error catalog lands. */
#ifndef QWEN_ERRORS_H
#define QWEN_ERRORS_H
#endif
