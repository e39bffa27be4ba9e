/* trace.c: placeholder until implemented. */
