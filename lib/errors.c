/* errors.c: placeholder until implemented. */
