/* budget.c: placeholder until implemented. */
